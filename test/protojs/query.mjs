// Calls methods of Pyroscope's query service on profd with Connect's
// Node.js client (@connectrpc/connect-node) and the messages protoc-gen-es
// generated from proto/ (gen.sh): a client profd did not write.
//   node query.mjs URL METHOD 'JSON request' [FLAGS] [--token T]
//   node query.mjs URL --serve FILE [--token T]
// FLAGS: --json (Connect JSON instead of binary protobuf), --gzip (the
// request gzipped, Content-Encoding: gzip), --out FILE (write a pprof
// answer's bytes, SelectMergeProfile's or a PPROF format's, to FILE),
// --canon (no call: the JSON given is an answer of METHOD, read strictly
// by protobuf-es and printed again, so answers from other clients compare
// byte for byte; --out still writes its pprof), --encode (no call: the
// request in binary protobuf to --out's FILE).
// A JSON argument "@FILE" is FILE's contents.
// Prints the answer on one line as JSON (protobuf's JSON mapping), or on a
// Connect error "error CODE MESSAGE" (exit status 2).
// --serve answers many calls in one process (a node start costs a second
// on a loaded machine): it reads "METHOD<TAB>JSON<TAB>FLAGS" lines on its
// standard input and for each writes the answer line to FILE (anew) and
// then its exit status on a line of its standard output (the answer can be
// megabytes: a shell reads a pipe a byte at a time, a file at once).
import { readFileSync, writeFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport, compressionGzip } from
    "@connectrpc/connect-node";
import { fromJson, toJson, toBinary } from "@bufbuild/protobuf";
import { QuerierService } from "./gen/querier/v1/querier_pb.js";
import { ProfileSchema } from "./gen/profile_pb.js";

const args = process.argv.slice(2);
const baseUrl = args[0];
const opt = (list, name) => {
	const i = list.indexOf(name);
	return i >= 0 ? list[i + 1] : undefined;
};
const token = opt(args, "--token");

// One client per (encoding, compression), made when first asked for.
const clients = new Map();
function client(json, gzip) {
	const key = `${json}/${gzip}`;
	if (!clients.has(key)) {
		const transport = createConnectTransport({
			baseUrl,
			httpVersion: "1.1",
			useBinaryFormat: !json,
			...(gzip ? { sendCompression: compressionGzip,
			    compressMinBytes: 0 } : {}),
			interceptors: token === undefined ? [] : [(next) =>
			    async (req) => {
				req.header.set("Authorization", `Bearer ${token}`);
				return await next(req);
			}],
		});
		clients.set(key, createClient(QuerierService, transport));
	}
	return clients.get(key);
}

// One call; returns [answer line, exit status].
async function call(method, reqText, flags) {
	const m = method === undefined ? undefined :
	    QuerierService.method[method.charAt(0).toLowerCase() +
	    method.slice(1)];
	if (m === undefined)
		return [`error Client no method ${method}`, 1];
	try {
		if (reqText?.startsWith("@"))
			reqText = readFileSync(reqText.slice(1), "utf8");
		if (flags.includes("--encode")) {
			writeFileSync(opt(flags, "--out"), toBinary(m.input,
			    fromJson(m.input, JSON.parse(reqText))));
			return ["{}", 0];
		}
		const res = flags.includes("--canon") ?
		    fromJson(m.output, JSON.parse(reqText)) :
		    await client(flags.includes("--json"),
		    flags.includes("--gzip"))[m.localName](fromJson(m.input,
		    JSON.parse(reqText || "{}")));
		const out = opt(flags, "--out");
		if (out !== undefined) {
			const prof = m.output.typeName ===
			    "perftools.profiles.Profile" ? res : res.pprof?.profile;
			if (prof !== undefined)
				writeFileSync(out, toBinary(ProfileSchema, prof));
		}
		return [JSON.stringify(toJson(m.output, res)), 0];
	} catch (e) {
		const ce = ConnectError.from(e);
		return [`error ${Code[ce.code]} ${ce.rawMessage}`.replace(/\n/g,
		    " "), 2];
	}
}

if (args[1] === "--serve") {
	const lines = createInterface({ input: process.stdin,
	    crlfDelay: Infinity });
	for await (const line of lines) {
		const [method, reqText, flags = ""] = line.split("\t");
		const [text, status] = await call(method, reqText,
		    flags.split(" ").filter((f) => f !== ""));
		writeFileSync(args[2], text + "\n");
		process.stdout.write(`${status}\n`);
	}
} else {
	const [text, status] = await call(args[1], args[2], args.slice(3));
	console.log(text);
	process.exitCode = status;
}
