// Calls one method of Pyroscope's query service on profd with Connect's
// Node.js client (@connectrpc/connect-node) and the messages protoc-gen-es
// generated from proto/ (gen.sh): a client profd did not write.
//   node query.mjs URL METHOD 'JSON request' [--json] [--token T] [--out FILE]
// Prints the answer as JSON (protobuf's JSON mapping), or with --out writes
// a pprof answer's bytes (SelectMergeProfile, or a PPROF format's profile)
// to FILE; on a Connect error prints "error CODE MESSAGE" and exits 2.
import { writeFileSync } from "node:fs";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { fromJson, toJson, toBinary } from "@bufbuild/protobuf";
import { QuerierService } from "./gen/querier/v1/querier_pb.js";
import { ProfileSchema } from "./gen/profile_pb.js";

const args = process.argv.slice(2);
const [baseUrl, method, reqText] = args;
const opt = (name) => {
	const i = args.indexOf(name);
	return i >= 0 ? args[i + 1] : undefined;
};
const useJson = args.includes("--json");
const token = opt("--token");
const out = opt("--out");

const transport = createConnectTransport({
	baseUrl,
	httpVersion: "1.1",
	useBinaryFormat: !useJson,
	interceptors: token === undefined ? [] : [(next) => async (req) => {
		req.header.set("Authorization", `Bearer ${token}`);
		return await next(req);
	}],
});
const client = createClient(QuerierService, transport);
const m = QuerierService.method[method.charAt(0).toLowerCase() +
    method.slice(1)];
if (m === undefined) {
	console.error(`no method ${method}`);
	process.exit(1);
}
try {
	const req = fromJson(m.input, JSON.parse(reqText ?? "{}"));
	const res = await client[m.localName](req);
	if (out !== undefined) {
		const prof = m.output.typeName === "perftools.profiles.Profile" ?
		    res : res.pprof?.profile;
		if (prof !== undefined)
			writeFileSync(out, toBinary(ProfileSchema, prof));
	}
	console.log(JSON.stringify(toJson(m.output, res)));
} catch (e) {
	const ce = ConnectError.from(e);
	console.log(`error ${Code[ce.code]} ${ce.rawMessage}`);
	process.exit(2);
}
