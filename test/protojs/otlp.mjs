// The test side of OTLP profiles, with the messages protoc-gen-es made
// from proto/ (gen.sh), not profd's code:
//   node otlp.mjs convert OUT proto|json SERVICE FILE...
//     pprof profiles (gzipped or not) to one ExportProfilesServiceRequest:
//     a resource per file (service.name, host.name), one OTLP profile per
//     sample type (OTLP's profiles have one), the dictionary shared;
//     pprof's sample labels become sample attributes.
//   node otlp.mjs bad OUT KIND
//     a request that is wrong in one way (KIND: stack_index, location,
//     function, string, mapping, attribute, depth, bomb, samples_bomb),
//     or (partial) whose second profile is dated ten days ahead.
import { readFileSync, writeFileSync } from "node:fs";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary, toJson } from "@bufbuild/protobuf";
import { ProfileSchema } from "./gen/profile_pb.js";
import { ExportProfilesServiceRequestSchema } from
    "./gen/opentelemetry/proto/collector/profiles/v1development/profiles_service_pb.js";

const [, , mode, out, ...rest] = process.argv;

// A dictionary under construction: every table starts with its zero value.
function newDict() {
	return { strings: [""], strIdx: new Map([["", 0]]), functions: [{}],
	    mappings: [{}], locations: [{}], stacks: [{ locationIndices: [] }],
	    stackIdx: new Map(), attributes: [{}], attrIdx: new Map(),
	    links: [{}] };
}
function str(d, s) {
	if (!d.strIdx.has(s)) {
		d.strIdx.set(s, d.strings.length);
		d.strings.push(s);
	}
	return d.strIdx.get(s);
}
function attr(d, key, value) {
	const k = JSON.stringify([key, typeof value === "bigint" ?
	    `#${value}` : value]);
	if (!d.attrIdx.has(k)) {
		d.attrIdx.set(k, d.attributes.length);
		d.attributes.push({ keyStrindex: str(d, key), value:
		    typeof value === "bigint" ? { value: { case: "intValue",
		    value } } : { value: { case: "stringValue", value } } });
	}
	return d.attrIdx.get(k);
}
function stack(d, locs) {
	const k = locs.join(",");
	if (!d.stackIdx.has(k)) {
		d.stackIdx.set(k, d.stacks.length);
		d.stacks.push({ locationIndices: locs });
	}
	return d.stackIdx.get(k);
}
function dictMessage(d) {
	return { stringTable: d.strings, functionTable: d.functions,
	    mappingTable: d.mappings, locationTable: d.locations,
	    stackTable: d.stacks, attributeTable: d.attributes,
	    linkTable: d.links };
}

// One pprof file into the dictionary and a ResourceProfiles.
function addFile(d, file, service, host) {
	let buf = readFileSync(file);
	if (buf[0] === 0x1f && buf[1] === 0x8b)
		buf = gunzipSync(buf);
	const p = fromBinary(ProfileSchema, buf);
	const S = (i) => p.stringTable[Number(i)] ?? "";
	const fnIdx = new Map(), mapIdx = new Map(), locIdx = new Map();
	for (const f of p.function) {
		fnIdx.set(f.id, d.functions.length);
		d.functions.push({ nameStrindex: str(d, S(f.name)),
		    systemNameStrindex: str(d, S(f.systemName)),
		    filenameStrindex: str(d, S(f.filename)),
		    startLine: f.startLine });
	}
	for (const m of p.mapping) {
		mapIdx.set(m.id, d.mappings.length);
		d.mappings.push({ memoryStart: m.memoryStart, memoryLimit:
		    m.memoryLimit, fileOffset: m.fileOffset,
		    filenameStrindex: str(d, S(m.filename)) });
	}
	for (const l of p.location) {
		locIdx.set(l.id, d.locations.length);
		d.locations.push({ mappingIndex: mapIdx.get(l.mappingId) ?? 0,
		    address: l.address, lines: l.line.map((ln) => ({
		    functionIndex: fnIdx.get(ln.functionId) ?? 0, line: ln.line,
		    column: ln.column })) });
	}
	const profiles = p.sampleType.map((st, t) => ({
		sampleType: { typeStrindex: str(d, S(st.type)),
		    unitStrindex: str(d, S(st.unit)) },
		periodType: p.periodType ? { typeStrindex:
		    str(d, S(p.periodType.type)), unitStrindex:
		    str(d, S(p.periodType.unit)) } : undefined,
		period: p.period, timeUnixNano: p.timeNanos > 0n ?
		    BigInt(p.timeNanos) : 0n, durationNano: p.durationNanos > 0n ?
		    BigInt(p.durationNanos) : 0n,
		samples: p.sample.filter((s) => s.value[t] !== 0n).map((s) => ({
			stackIndex: stack(d, s.locationId.map((id) =>
			    locIdx.get(id))),
			values: [s.value[t]],
			attributeIndices: s.label.map((lb) => attr(d,
			    S(lb.key), lb.str !== 0n ? S(lb.str) : lb.num)),
		})),
	}));
	return { resource: { attributes: [
	    { key: "service.name", value: { value: { case: "stringValue",
		value: service } } },
	    { key: "host.name", value: { value: { case: "stringValue",
		value: host } } }] },
	    scopeProfiles: [{ scope: { name: "otlp.mjs" }, profiles }] };
}

function write(req, enc) {
	const msg = create(ExportProfilesServiceRequestSchema, req);
	if (enc === "json")
		writeFileSync(out, JSON.stringify(toJson(
		    ExportProfilesServiceRequestSchema, msg)));
	else
		writeFileSync(out, toBinary(ExportProfilesServiceRequestSchema,
		    msg));
}

if (mode === "convert") {
	const [enc, service, ...files] = rest;
	const d = newDict();
	const rps = files.map((f, i) => addFile(d, f, service, `host${i}`));
	write({ resourceProfiles: rps, dictionary: dictMessage(d) }, enc);
} else if (mode === "bad") {
	const [kind] = rest;
	const d = newDict();
	const fn = d.functions.push({ nameStrindex: str(d, "main") }) - 1;
	const loc = d.locations.push({ lines: [{ functionIndex: fn }] }) - 1;
	const st = stack(d, [loc]);
	const prof = { sampleType: { typeStrindex: str(d, "samples"),
	    unitStrindex: str(d, "count") }, samples: [{ stackIndex: st,
	    values: [1n] }] };
	const res = { resource: { attributes: [{ key: "service.name",
	    value: { value: { case: "stringValue", value: "bad" } } }] },
	    scopeProfiles: [{ profiles: [prof] }] };
	if (kind === "stack_index")
		prof.samples[0].stackIndex = 77;
	else if (kind === "location")
		d.stacks[st].locationIndices = [loc, 500];
	else if (kind === "function")
		d.locations[loc].lines[0].functionIndex = 999;
	else if (kind === "string")
		d.functions[fn].nameStrindex = 1000;
	else if (kind === "mapping")
		d.locations[loc].mappingIndex = 3;
	else if (kind === "attribute")
		prof.samples[0].attributeIndices = [42];
	else if (kind === "depth") {
		let v = { value: { case: "stringValue", value: "x" } };
		for (let i = 0; i < 100; i++)
			v = { value: { case: "arrayValue", value: { values: [v] } } };
		res.resource.attributes.push({ key: "deep", value: v });
	} else if (kind === "bomb") {
		// one stack of 100,000 frames, 2,000 samples of it: a body of
		// some kilobytes that would write 200 million frames
		d.stacks[st].locationIndices = new Array(100000).fill(loc);
		prof.samples = new Array(2000).fill(prof.samples[0]);
	} else if (kind === "partial") {
		// two profiles: one dated ten days ahead (past --max-future)
		const later = BigInt(Date.now() + 10 * 86400000) * 1000000n;
		res.scopeProfiles[0].profiles.push({ ...prof,
		    timeUnixNano: later });
	} else if (kind === "samples_bomb") {
		prof.samples = new Array(300000).fill({ stackIndex: st,
		    values: [1n] });
		d.stacks[st].locationIndices = new Array(200).fill(loc);
	}
	write({ resourceProfiles: [res], dictionary: dictMessage(d) },
	    rest[1] ?? "proto");
} else {
	console.error("usage: otlp.mjs convert|bad ...");
	process.exit(1);
}
