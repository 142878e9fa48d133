// Grafana Pyroscope's Node.js SDK (@pyroscope/nodejs, unchanged) pushing
// wall and heap profiles to profd's /ingest: burns CPU in burnHashes and
// keeps memory from keepArrays, flushing every 2 s, then stops (which
// flushes the last window). PROFD_URL, PROFD_TOKEN, PUSH_SECONDS.
'use strict';
const Pyroscope = require('@pyroscope/nodejs');

const seconds = Number(process.env.PUSH_SECONDS || 7);
const kept = [];

function burnHashes(ms) {
	const end = Date.now() + ms;
	let x = 0;
	while (Date.now() < end)
		for (let i = 0; i < 100000; i++)
			x = (x * 31 + i) | 0;
	return x;
}

function keepArrays() {
	for (let i = 0; i < 200; i++)
		kept.push(new Array(10000).fill(i));
}

async function main() {
	Pyroscope.init({
		serverAddress: process.env.PROFD_URL,
		appName: 'nodeapp',
		authToken: process.env.PROFD_TOKEN || undefined,
		flushIntervalMs: 2000,
		tags: { env: 'test', region: 'eu-west' },
		wall: { samplingDurationMs: 2000 },
		heap: { samplingIntervalBytes: 64 * 1024 },
	});
	Pyroscope.start();
	keepArrays();
	const end = Date.now() + seconds * 1000;
	let x = 0;
	while (Date.now() < end) {
		x ^= burnHashes(50);
		await new Promise((resolve) => setImmediate(resolve));
	}
	await Pyroscope.stop();
	console.log('done', x & 1, kept.length);
}

main().catch((e) => { console.error(e); process.exit(1); });
