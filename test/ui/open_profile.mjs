// Opens one service's profiles in profd's UI (/ui/) in Debian's chromium,
// driven by playwright-core, and prints TAP: the top table's first row is
// UI_TOP_NAME, the flame graph is drawn and holds a frame named
// UI_FRAME, the page shows no error. For profiles made elsewhere than
// the UI's own test (test/e2e/hostagent_progs.sh: profd-hostagent's).
// Environment: PROFD_URL, UI_SERVICE, UI_TOP_NAME, UI_FRAME,
// UI_SCREENSHOT (optional: a PNG to write); CHROMIUM (default
// /usr/bin/chromium). Bounded: 30 s a step, 120 s in all.
import { chromium } from 'playwright-core';

const env = process.env;
const STEP = 30000, WHOLE = 120000;
let n = 0, failed = 0, browser;

function ok(cond, name, diag) {
	n++;
	console.log(`${cond ? 'ok' : 'not ok'} ${n} - ${name}`);
	if (!cond) {
		failed++;
		if (diag) console.log(String(diag).split('\n').map((l) => '# ' + l).join('\n'));
	}
}
async function check(name, fn) {
	try {
		const r = await fn();
		ok(r === true || r === undefined, name, r);
	} catch (e) {
		ok(false, name, e && e.message ? e.message.split('\n').slice(0, 4).join('\n') : e);
	}
}
function finish() {
	console.log(`1..${n}`);
	process.exit(failed ? 1 : 0);
}
setTimeout(() => {
	ok(false, `whole run within ${WHOLE / 1000} s`);
	if (browser) browser.close().catch(() => {});
	finish();
}, WHOLE);

async function main() {
	browser = await chromium.launch({ executablePath: env.CHROMIUM || '/usr/bin/chromium',
		headless: true, args: ['--no-sandbox'], timeout: 20000 });
	const page = await browser.newPage({ viewport: { width: 1366, height: 900 } });
	page.setDefaultTimeout(STEP);
	const errors = [];
	page.on('pageerror', (e) => errors.push(e.message));
	await page.goto(env.PROFD_URL.replace(/\/+$/, '') + '/ui/');
	await check(`the service ${env.UI_SERVICE} is listed and selected`, async () => {
		await page.waitForFunction((s) => [...document.querySelectorAll('#service option')]
		    .some((o) => o.value === s), env.UI_SERVICE, { timeout: STEP });
		await page.selectOption('#service', env.UI_SERVICE);
		await page.waitForFunction((s) => {
			const u = window.profdUI;
			if (!u) return false;
			const st = u.state();
			return st.idle && st.service === s && st.total > 0;
		}, env.UI_SERVICE, { timeout: STEP });
	});
	await check(`the top table's first row is ${env.UI_TOP_NAME}`, async () => {
		const row = page.locator('#top tbody tr').first();
		await row.waitFor({ timeout: STEP });
		const name = (await row.locator('td.name').innerText()).trim();
		return name === env.UI_TOP_NAME || `got ${JSON.stringify(name)}`;
	});
	await check(`the flame graph is drawn and has a frame ${env.UI_FRAME}`, async () => {
		const r = await page.evaluate((nm) => window.profdUI.frameAt(nm), env.UI_FRAME);
		return (r && r.w > 0) || `no frame: ${JSON.stringify(r)}`;
	});
	await check('the page shows no error', async () => {
		const shown = await page.locator('#error').isVisible();
		return (!shown && errors.length === 0) ||
		    `error shown: ${shown ? await page.locator('#error').innerText() : ''} ${errors.join('; ')}`;
	});
	if (env.UI_SCREENSHOT)
		await page.screenshot({ path: env.UI_SCREENSHOT, timeout: STEP }).catch(() => {});
	await browser.close();
	finish();
}
main().catch((e) => {
	ok(false, 'the browser ran', e && e.message ? e.message : e);
	if (browser) browser.close().catch(() => {});
	finish();
});
