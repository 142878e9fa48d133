/*
 * profd UI (app.js): a plain ES module, no build step, no dependencies.
 * All the view's state lives in the query string of /ui/ (see KEYS); the
 * data comes from /api/0/*. The flame graph is an icicle: the root
 * ("total") is the top row and callees hang below their callers; when
 * zoomed, the zoomed frame's ancestors stay above it at full width.
 * The keyboard cursor (curPath, names below the root, like zoom) is a frame
 * the arrow keys move; it is shown (kb) while the canvas has keyboard focus.
 * Test hooks: window.profdUI.frameAt(name), state() and cursor().
 */

const $ = (id) => document.getElementById(id);
const KEYS = ['service', 'type', 'sample_type', 'labels', 'range', 'from', 'to',
	'focus', 'hide', 'mode', 'base_labels', 'base_range', 'base_from', 'base_to',
	'zoom', 'search'];
const VIEW_ONLY = ['zoom', 'search'];	/* change the drawing, not the data */
const RANGES = ['15m', '1h', '6h', '24h', '7d'];
const ROW = 18;				/* flame graph row height, CSS px */

let state = readURL();
let token = sessionStorage.getItem('profd_token') || '';
let services = null;
let flame = null, top = null;		/* bodies of /flamegraph|/diff and /top */
let frames = [];			/* the frames drawn, pre-order */
let frameOf = new Map();		/* tree node -> its frame in frames */
let hover = null, selectedFn = null;
/* The sandwich's tree: the flame graph focused on selectedFn (exact), if
 * fetched; else the view's own, pruned, tree is used. */
let lastView = null, sandwich = null, sandwichCtrl = null;
let curPath = null, kb = false, ptrDown = false;	/* the keyboard cursor */
let busy = false, loads = 0, loadedKey = null, loadGen = 0, ctrl = null;
let lastError = '', matches = 0, share = null;
let timelineMissing = false, timeline = null, tlDrag = null;
let sortKey = 'flat', sortDir = -1;

class ApiError extends Error {
	constructor(code, msg) { super(msg); this.code = code; }
}

/* ---- URL state ---- */

function readURL() {
	const p = new URLSearchParams(location.search), s = {};
	for (const k of KEYS) {
		const v = p.get(k);
		if (v) s[k] = v;
	}
	if (!s.type) s.type = 'cpu';
	if (s.from || s.to) delete s.range;
	else if (!RANGES.includes(s.range)) s.range = '1h';
	if (s.base_from || s.base_to) delete s.base_range;
	else if (s.base_range && !RANGES.includes(s.base_range)) delete s.base_range;
	if (s.mode !== 'diff') delete s.mode;
	return s;
}

/* Query-string encoding that leaves = , ; : / @ readable. */
function enc(v) {
	return encodeURIComponent(v).replace(/%(3D|2C|3B|3A|2F|40)/g,
	    (m) => decodeURIComponent(m));
}

function writeURL(push) {
	const q = KEYS.filter((k) => state[k]).map((k) => k + '=' + enc(state[k])).join('&');
	const url = location.pathname + (q ? '?' + q : '');
	if (url !== location.pathname + location.search)
		history[push ? 'pushState' : 'replaceState'](null, '', url);
}

function dataKey(s) {
	return JSON.stringify(KEYS.filter((k) => !VIEW_ONLY.includes(k)).map((k) => s[k] || ''));
}

/* Labels: state holds the API's raw form, k=v,k2=v2 with each part percent-encoded. */
function safeDec(s) {
	try { return decodeURIComponent(s); } catch { return s; }
}
function parseLabels(raw) {
	if (!raw) return [];
	return raw.split(',').filter(Boolean).map((p) => {
		const i = p.indexOf('=');
		return i < 0 ? [safeDec(p), ''] : [safeDec(p.slice(0, i)), safeDec(p.slice(i + 1))];
	});
}
function rawLabels(list) {
	return list.map(([k, v]) => encodeURIComponent(k) + '=' + encodeURIComponent(v)).join(',');
}
function humanLabels(raw) {
	return parseLabels(raw).map(([k, v]) => k + '=' + v).join(',');
}
function labelsFromHuman(text) {
	return rawLabels(text.split(',').map((s) => s.trim()).filter(Boolean).map((p) => {
		const i = p.indexOf('=');
		return i < 0 ? [p, ''] : [p.slice(0, i).trim(), p.slice(i + 1).trim()];
	}));
}

/* ---- the API ---- */

function apiQS(o) {
	return Object.entries(o).filter(([, v]) => v != null && v !== '')
	    .map(([k, v]) => k + '=' + (k === 'labels' || k === 'base_labels' ? v : encodeURIComponent(v)))
	    .join('&');
}

/* How long a request waits out 503s (the collector busy: its merge cap,
 * its queues) before the error is shown; each wait is the reply's
 * Retry-After (1 s if it has none), at most API_BUSY_STEP_MS. */
const API_BUSY_MS = 30000, API_BUSY_STEP_MS = 5000;

/* Resolves after ms, or rejects with an AbortError when signal aborts. */
function apiSleep(ms, signal) {
	return new Promise((resolve, reject) => {
		const gone = () => { clearTimeout(t); reject(new DOMException('aborted', 'AbortError')); };
		const t = setTimeout(() => { if (signal) signal.removeEventListener('abort', gone); resolve(); }, ms);
		if (!signal) return;
		if (signal.aborted) gone();
		else signal.addEventListener('abort', gone, { once: true });
	});
}

/* Fetches /api/0/<path>?<params>; a 503 is retried as its Retry-After
 * says, up to API_BUSY_MS; the body of any other non-2xx is thrown. */
async function api(path, params, signal) {
	const url = '/api/0/' + path + (params ? '?' + apiQS(params) : '');
	let res;
	for (let waited = 0; ; ) {
		res = await fetch(url, { headers: authHeaders(), signal });
		if (res.status !== 503 || waited >= API_BUSY_MS) break;
		const ra = parseFloat(res.headers.get('Retry-After'));
		const ms = Math.min(API_BUSY_STEP_MS, Math.max(250, ra >= 0 ? ra * 1000 : 1000));
		if (res.body) res.body.cancel().catch(() => {});
		await apiSleep(ms + Math.random() * 250, signal);
		waited += ms;
	}
	let j = null;
	try { j = await res.json(); } catch { /* not JSON */ }
	if (!res.ok || !j || (j.code && j.code >= 400))
		throw new ApiError(res.status, (j && j.error) || `HTTP ${res.status} from ${path}`);
	return j.body;
}

function authHeaders() {
	return token ? { Authorization: 'Bearer ' + token } : {};
}

function win(s, p) {
	if (s[p + 'range']) return { from: 'now-' + s[p + 'range'], to: '' };
	return { from: s[p + 'from'] || '', to: s[p + 'to'] || '' };
}
function selection() {
	const w = win(state, '');
	return { service: state.service, type: state.type, from: w.from, to: w.to, labels: state.labels };
}
function viewParams(sampleType) {
	const v = { ...selection(), sample_type: sampleType, focus: state.focus, hide: state.hide };
	if (state.mode === 'diff') {
		if (state.base_labels !== undefined) v.base_labels = state.base_labels;
		if (state.base_range || state.base_from || state.base_to) {
			const b = win(state, 'base_');
			v.base_from = b.from;
			v.base_to = b.to || 'now';
		}
	}
	return v;
}

/* ---- formatting ---- */

function fmtVal(v, unit) {
	if (v == null) return '';
	const a = Math.abs(v);
	if (unit === 'nanoseconds') {
		if (a >= 1e9) return (v / 1e9).toFixed(2) + ' s';
		if (a >= 1e6) return (v / 1e6).toFixed(2) + ' ms';
		if (a >= 1e3) return (v / 1e3).toFixed(2) + ' µs';
		return v + ' ns';
	}
	if (unit === 'bytes') {
		const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let i = 0, x = v;
		while (Math.abs(x) >= 1024 && i < u.length - 1) { x /= 1024; i++; }
		return (i ? x.toFixed(2) : x) + ' ' + u[i];
	}
	const n = Math.round(v).toLocaleString('en-US');
	return unit && unit !== 'count' ? n + ' ' + unit : n;
}
function pct(a, b) {
	return b ? (100 * a / b).toFixed(2) + '%' : '–';
}
function fmtUTC(sec) {
	return new Date(sec * 1000).toISOString().slice(0, 19);
}
function el(tag, attrs, ...kids) {
	const e = document.createElement(tag);
	for (const [k, v] of Object.entries(attrs || {})) {
		if (k === 'class') e.className = v;
		else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
		else e.setAttribute(k, v);
	}
	for (const k of kids) if (k != null) e.append(k);
	return e;
}

/* ---- errors and auth ---- */

function setError(msg) {
	lastError = msg || '';
	$('error').textContent = lastError;
	$('error').hidden = !lastError;
}
function handleError(e) {
	if (e.name === 'AbortError') return;
	if (e.code === 401) {
		$('token-form').hidden = false;
		$('token-msg').textContent = token ?
		    `The token was refused (${e.message}). Enter a read token.` :
		    'This profd needs a read token.';
		$('token').focus();
		return;
	}
	setError(e.message);
}

/* ---- loading ---- */

async function load() {
	const gen = ++loadGen;
	const live = () => gen === loadGen;
	if (ctrl) ctrl.abort();
	ctrl = new AbortController();
	const sig = ctrl.signal;
	busy = true;
	setError('');
	try {
		if (!services) {
			services = await api('services', null, sig);
			$('token-form').hidden = true;
		}
		if (!live()) return;
		if (!state.service && services.length) {
			state.service = services[0];
			writeURL(false);
		}
		syncControls();
		if (!state.service) {
			flame = top = null;
			renderAll('No profiles are stored yet.');
			renderProfiles([]);
			return;
		}
		const sel = selection();
		setMergedLink(sel);
		const side = Promise.all([
			api('labels', { service: state.service }, sig).then(fillLabelKeys),
			api('profiles', { ...sel, limit: 200 }, sig).then(renderProfiles),
		]).catch((e) => { if (live()) handleError(e); });
		const st = await api('sample_types', sel, sig);
		if (!live()) return;
		const st1 = fillSampleTypes(st);
		if (!st.profiles) {
			flame = top = null;
			renderAll(`No ${state.type} profiles of ${state.service} in this window.`);
			/* Still drawn (empty), so a drag or a wider range gets back. */
			await loadTimeline(sel, sig);
		} else {
			const v = viewParams(st1);
			lastView = v;
			sandwich = null;
			const tl = loadTimeline({ ...sel, sample_type: st1 }, sig);
			const [f, t] = await Promise.all([
				api(state.mode === 'diff' ? 'diff' : 'flamegraph', v, sig),
				api('top', { ...v, limit: 500 }, sig),
			]);
			if (!live()) return;
			flame = f;
			top = t;
			renderAll('');
			loadSandwich();
			await tl;
		}
		await side;
	} catch (e) {
		if (live()) handleError(e);
	} finally {
		if (live()) {
			busy = false;
			loads++;
			loadedKey = dataKey(state);
		}
	}
}

function renderAll(emptyMsg) {
	$('flame-empty').textContent = emptyMsg;
	$('flame-empty').hidden = !emptyMsg;
	const diff = state.mode === 'diff' && flame;
	$('flame-title').textContent = diff ? 'Diff flame graph' : 'Flame graph';
	$('diff-legend').hidden = !diff;
	if (diff) {
		$('diff-totals').textContent = `selection ${fmtVal(flame.total, flame.unit)} (${flame.profiles} profiles)` +
		    ` vs baseline ${fmtVal(flame.base_total, flame.unit)} (${flame.base_profiles ?? '?'} profiles)`;
	}
	$('summary').textContent = flame ?
	    `${fmtVal(flame.total, flame.unit)} total · ${flame.profiles} profiles · ${flame.sample_type}` +
	    (flame.unit ? ` (${flame.unit})` : '') : '';
	renderFlame();
	renderTop();
	renderSandwich();
}

/* ---- controls ---- */

function fillSelect(sel, items, value) {
	sel.textContent = '';
	for (const it of items) {
		const [v, text] = Array.isArray(it) ? it : [it, it];
		sel.append(el('option', { value: v }, text));
	}
	if (value != null) sel.value = value;
}

function syncControls() {
	const svc = services || [];
	fillSelect($('service'), svc.includes(state.service) || !state.service ? svc : [state.service, ...svc], state.service || '');
	$('type').value = state.type;
	const custom = !state.range;
	$('range').value = custom ? 'custom' : state.range;
	$('custom-range').hidden = !custom;
	$('from').value = state.from || '';
	$('to').value = state.to || '';
	$('focus').value = state.focus || '';
	$('hide').value = state.hide || '';
	if (state.focus || state.hide) $('advanced').open = true;
	$('mode-diff').checked = state.mode === 'diff';
	$('baseline').hidden = state.mode !== 'diff';
	$('base-labels').value = humanLabels(state.base_labels);
	const bcustom = !!(state.base_from || state.base_to);
	$('base-range').value = bcustom ? 'custom' : state.base_range || '';
	$('base-custom').hidden = !bcustom;
	$('base-from').value = state.base_from || '';
	$('base-to').value = state.base_to || '';
	if (document.activeElement !== $('search')) $('search').value = state.search || '';
	renderChips();
}

function fillSampleTypes(st) {
	const types = st.sample_types || [];
	if (state.sample_type && !types.some((t) => t.type === state.sample_type)) {
		delete state.sample_type;
		writeURL(false);
	}
	const cur = state.sample_type || st.default || (types.length ? types[types.length - 1].type : '');
	fillSelect($('sample-type'), types.map((t) => [t.type, t.unit ? `${t.type} (${t.unit})` : t.type]), cur);
	return cur;
}

function fillLabelKeys(keys) {
	const k = $('label-key').value;
	fillSelect($('label-key'), [['', 'key…'], ...keys], keys.includes(k) ? k : '');
	if (!keys.includes(k)) fillSelect($('label-value'), [['', 'value…']], '');
}

async function fillLabelValues() {
	const k = $('label-key').value;
	fillSelect($('label-value'), [['', k ? 'loading…' : 'value…']], '');
	if (!k) return;
	try {
		const vals = await api('labels', { service: state.service, key: k });
		if ($('label-key').value === k)
			fillSelect($('label-value'), [['', 'value…'], ...vals], vals.length === 1 ? vals[0] : '');
	} catch (e) { handleError(e); }
}

function renderChips() {
	const box = $('chips');
	box.textContent = '';
	const list = parseLabels(state.labels);
	list.forEach(([k, v], i) => {
		const text = k + '=' + v;
		box.append(el('span', { class: 'chip' }, text,
		    el('button', { type: 'button', 'aria-label': 'Remove filter ' + text, title: 'Remove',
			onclick: () => {
				list.splice(i, 1);
				set({ labels: rawLabels(list) || undefined, zoom: undefined });
			} }, '×')));
	});
}

function setMergedLink(sel) {
	const a = $('download-merged');
	a.href = '/api/0/profiles/merge?' + apiQS(sel);
	a.setAttribute('download', `${sel.service}-${sel.type}.pb.gz`);
	a.classList.add('dl');
}

/* Changes state; data changes push a history entry and reload. */
function set(changes, opts = {}) {
	for (const [k, v] of Object.entries(changes)) {
		if (v === undefined || v === '') delete state[k];
		else state[k] = v;
	}
	writeURL(!opts.replace);
	if (opts.viewOnly) {
		renderFlame();
		return;
	}
	load();
}

function applyRange() {
	const from = $('from').value.trim(), to = $('to').value.trim();
	if (!from && !to) set({ range: '1h', from: undefined, to: undefined, zoom: undefined });
	else set({ range: undefined, from, to, zoom: undefined });
}

function applyBase() {
	const r = $('base-range').value;
	const text = $('base-labels').value.trim();
	const ch = { base_labels: text ? labelsFromHuman(text) : undefined, zoom: undefined };
	if (r === 'custom') {
		Object.assign(ch, { base_range: undefined, base_from: $('base-from').value.trim(),
			base_to: $('base-to').value.trim() });
	} else {
		Object.assign(ch, { base_range: r || undefined, base_from: undefined, base_to: undefined });
	}
	set(ch);
}

function onEnter(id, fn) {
	$(id).addEventListener('keydown', (e) => {
		if (e.key === 'Enter') { e.preventDefault(); fn(); }
	});
}

function bind() {
	$('controls').addEventListener('submit', (e) => e.preventDefault());
	$('service').addEventListener('change', (e) => set({ service: e.target.value, zoom: undefined }));
	$('type').addEventListener('change', (e) => set({ type: e.target.value, sample_type: undefined, zoom: undefined }));
	$('sample-type').addEventListener('change', (e) => set({ sample_type: e.target.value, zoom: undefined }));
	$('range').addEventListener('change', (e) => {
		const r = e.target.value;
		if (r !== 'custom') {
			set({ range: r, from: undefined, to: undefined, zoom: undefined });
			return;
		}
		$('custom-range').hidden = false;
		if (!$('from').value && state.range) {
			const now = Math.floor(Date.now() / 1000);
			const m = /^(\d+)([mhd])$/.exec(state.range);
			$('from').value = fmtUTC(now - m[1] * { m: 60, h: 3600, d: 86400 }[m[2]]);
			$('to').value = fmtUTC(now);
		}
		$('from').focus();
	});
	$('apply-range').addEventListener('click', applyRange);
	onEnter('from', applyRange);
	onEnter('to', applyRange);
	$('label-key').addEventListener('change', fillLabelValues);
	$('label-add').addEventListener('click', () => {
		const k = $('label-key').value, v = $('label-value').value;
		if (!k) { $('label-key').focus(); return; }
		const list = parseLabels(state.labels).filter(([k2]) => k2 !== k);
		list.push([k, v]);
		set({ labels: rawLabels(list), zoom: undefined });
	});
	for (const id of ['focus', 'hide']) {
		$(id).addEventListener('change', (e) => set({ [id]: e.target.value.trim(), zoom: undefined }));
	}
	$('mode-diff').addEventListener('change', (e) => {
		$('baseline').hidden = !e.target.checked;
		set({ mode: e.target.checked ? 'diff' : undefined, zoom: undefined });
	});
	$('base-range').addEventListener('change', (e) => {
		$('base-custom').hidden = e.target.value !== 'custom';
		if (e.target.value !== 'custom') applyBase();
		else $('base-from').focus();
	});
	$('apply-base').addEventListener('click', applyBase);
	for (const id of ['base-labels', 'base-from', 'base-to']) onEnter(id, applyBase);

	let searchTimer = 0;
	$('search').addEventListener('input', (e) => {
		if (e.target.value) state.search = e.target.value;
		else delete state.search;
		clearTimeout(searchTimer);
		searchTimer = setTimeout(() => set({}, { replace: true, viewOnly: true }), 120);
	});
	$('reset').addEventListener('click', () => set({ zoom: undefined }, { viewOnly: true }));
	$('top-filter').addEventListener('input', renderTop);
	for (const b of document.querySelectorAll('#top th button')) {
		b.addEventListener('click', () => {
			const k = b.dataset.sort;
			sortDir = k === sortKey ? -sortDir : (k === 'name' ? 1 : -1);
			sortKey = k;
			renderTop();
		});
	}
	$('token-form').addEventListener('submit', (e) => {
		e.preventDefault();
		token = $('token').value.trim();
		sessionStorage.setItem('profd_token', token);
		$('token').value = '';
		$('token-form').hidden = true;
		services = null;
		load();
	});
	window.addEventListener('popstate', () => {
		const before = dataKey(state);
		state = readURL();
		syncControls();
		if (dataKey(state) !== before) load();
		else renderFlame();
	});
	document.addEventListener('click', download);

	const cv = $('flame');
	cv.addEventListener('mousemove', (e) => flameHover(e));
	cv.addEventListener('mouseleave', () => { hover = null; tooltip(null); renderFlame(); });
	cv.addEventListener('click', (e) => {
		const f = hit(e.offsetX, e.offsetY);
		if (!f) return;
		curPath = pathOf(f);
		zoomTo(f);
	});
	/* The mouse hides the keyboard cursor; focus by keyboard shows it. */
	cv.addEventListener('pointerdown', () => {
		ptrDown = true;
		if (kb) showCursor(false);
	});
	for (const t of ['pointerup', 'pointercancel']) addEventListener(t, () => { ptrDown = false; });
	cv.addEventListener('focus', () => { if (!ptrDown) showCursor(true); });
	cv.addEventListener('blur', () => showCursor(false));
	cv.addEventListener('keydown', flameKey);
	let raf = 0;
	const redraw = () => {
		cancelAnimationFrame(raf);
		raf = requestAnimationFrame(() => { renderFlame(); drawTimeline(); });
	};
	new ResizeObserver(redraw).observe($('flame-wrap'));
	document.addEventListener('scroll', () => { if (kb && !hover) cursorInfo(cursorFrame()); },
	    { capture: true, passive: true });
	matchMedia('(prefers-color-scheme: dark)').addEventListener('change', redraw);
	bindTimeline();
}

/* Downloads with the token: fetch, then a blob URL. */
async function download(e) {
	const a = e.target.closest && e.target.closest('a.dl');
	if (!a || !token || e.button !== 0) return;
	e.preventDefault();
	try {
		const res = await fetch(a.href, { headers: authHeaders() });
		if (!res.ok) {
			const j = await res.json().catch(() => null);
			throw new ApiError(res.status, (j && j.error) || 'HTTP ' + res.status);
		}
		const blob = await res.blob();
		const m = /filename="?([^";]+)"?/.exec(res.headers.get('Content-Disposition') || '');
		const u = URL.createObjectURL(blob);
		const tmp = el('a', { href: u, download: m ? m[1] : a.getAttribute('download') || 'profile.pb.gz' });
		document.body.append(tmp);
		tmp.click();
		tmp.remove();
		setTimeout(() => URL.revokeObjectURL(u), 60000);
	} catch (err) { handleError(err); }
}

/* ---- flame graph ---- */

function css(name) {
	return getComputedStyle(document.documentElement).getPropertyValue(name).trim();
}
function rgb(hex) {
	const m = /^#?([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(hex) || [0, 'b9', 'b9', 'b9'];
	return [1, 2, 3].map((i) => parseInt(m[i], 16));
}
function mix(a, b, t) {
	return `rgb(${a.map((x, i) => Math.round(x + (b[i] - x) * t)).join(',')})`;
}
function hash(s) {
	let h = 2166136261;
	for (let i = 0; i < s.length; i++) { h ^= s.charCodeAt(i); h = Math.imul(h, 16777619); }
	return h >>> 0;
}

function searchRegex() {
	const q = state.search;
	if (!q) return null;
	try { return new RegExp(q, 'i'); } catch {
		return new RegExp(q.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'i');
	}
}

/* The chain of nodes from the root down the zoom path, or null. */
function zoomChain(root) {
	const chain = [root];
	if (!state.zoom) return chain;
	let n = root;
	for (const name of state.zoom.split(';')) {
		n = (n.children || []).find((c) => c.name === name);
		if (!n) return null;
		chain.push(n);
	}
	return chain;
}

/* Lays the frames out for width W; returns the number of rows. */
function layout(W) {
	frames = [];
	frameOf = new Map();
	if (!flame || !flame.root) return 0;
	let chain = zoomChain(flame.root);
	if (!chain) {
		chain = [flame.root];
		delete state.zoom;
		writeURL(false);
	}
	let p = null, rows = chain.length;
	chain.forEach((n, d) => {
		p = { n, x: 0, w: W, d, p, anc: d < chain.length - 1 };
		frames.push(p);
		frameOf.set(n, p);
	});
	const z = chain[chain.length - 1];
	const scale = z.value > 0 ? W / z.value : 0;
	const walk = (pf, x, d) => {
		for (const c of pf.n.children || []) {
			const w = c.value * scale;
			if (w >= 0.4) {
				const f = { n: c, x, w, d, p: pf, anc: false };
				frames.push(f);
				frameOf.set(c, f);
				if (d + 1 > rows) rows = d + 1;
				walk(f, x, d + 1);
			}
			x += w;
		}
	};
	walk(p, 0, chain.length);
	return rows;
}

function pathOf(f) {
	const a = [];
	for (let g = f; g && g.p; g = g.p) a.push(g.n.name);
	return a.reverse();
}

/* Matches in the whole tree: share without double counting nested ones. */
function searchStats(re) {
	let sum = 0, count = 0;
	const walk = (n, inside) => {
		for (const c of n.children || []) {
			const m = re.test(c.name);
			if (m) count++;
			if (m && !inside) sum += c.value;
			walk(c, inside || m);
		}
	};
	walk(flame.root, false);
	return { sum, count };
}

function frameColour(f, re, pal) {
	const n = f.n;
	if (state.mode === 'diff' && flame.base_total !== undefined) {
		const tot = flame.total || 1, btot = flame.base_total;
		const s = n.value / tot, bs = btot ? (n.base_value || 0) / btot : 0;
		const rel = (s - bs) / Math.max(s, bs, 1e-12);
		if (re && !re.test(n.name)) return pal.dim;
		if (Math.abs(rel) < 0.05) return pal.sameS;
		return mix(pal.same, rel > 0 ? pal.grew : pal.shrank, 0.3 + 0.7 * Math.min(1, Math.abs(rel)));
	}
	if (re) return re.test(n.name) ? pal.match : pal.dim;
	if (n.name === 'other') return pal.sameS;
	const h = hash(n.name);
	return `hsl(${h % 40 + 8},${72 + (h >> 8) % 20}%,${57 + (h >> 16) % 14}%)`;
}

function renderFlame() {
	const cv = $('flame');
	const W = Math.max(200, cv.clientWidth || $('flame-wrap').clientWidth);
	const rows = layout(W);
	const H = Math.max(rows, 1) * ROW;
	const dpr = window.devicePixelRatio || 1;
	cv.style.height = H + 'px';
	cv.width = Math.round(W * dpr);
	cv.height = Math.round(H * dpr);
	const ctx = cv.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.clearRect(0, 0, W, H);
	const re = searchRegex();
	updateSearchShare(re);
	updateZoomPath();
	if (!frames.length) {
		if (kb) cursorInfo(null);
		return;
	}
	const same = rgb(css('--same'));
	const pal = { grew: rgb(css('--grew')), shrank: rgb(css('--shrank')), same,
		sameS: mix(same, same, 0), match: css('--match'), dim: mix(same, [255, 255, 255], 0.35) };
	ctx.font = '12px ui-monospace, Menlo, Consolas, monospace';
	ctx.textBaseline = 'middle';
	const cw = ctx.measureText('m').width || 7;
	for (const f of frames) {
		const y = f.d * ROW;
		ctx.globalAlpha = f.anc ? 0.55 : 1;
		ctx.fillStyle = frameColour(f, re, pal);
		ctx.fillRect(f.x, y, Math.max(f.w - 1, 0.6), ROW - 1);
		if (f.w > 3 * cw) {
			const max = Math.floor((f.w - 6) / cw);
			const name = f.n.name;
			ctx.fillStyle = '#111';
			ctx.fillText(name.length > max ? name.slice(0, max - 1) + '…' : name, f.x + 3, y + ROW / 2);
		}
	}
	ctx.globalAlpha = 1;
	if (re && state.mode === 'diff') {
		ctx.strokeStyle = pal.match;
		ctx.lineWidth = 2;
		for (const f of frames) {
			if (f.w >= 2 && re.test(f.n.name)) ctx.strokeRect(f.x + 1, f.d * ROW + 1, f.w - 3, ROW - 3);
		}
	}
	/* Frames are rebuilt at each render: find the hovered node's. */
	const hf = hover && frameOf.get(hover.n);
	if (hf) {
		ctx.strokeStyle = css('--fg');
		ctx.lineWidth = 1.5;
		ctx.strokeRect(hf.x + 0.75, hf.d * ROW + 0.75, Math.max(hf.w - 2.5, 1), ROW - 2.5);
	}
	if (kb) {
		const cf = cursorFrame();
		if (cf) drawCursor(ctx, cf);
		cursorInfo(cf);
	}
}

/* The keyboard cursor: a thick focus-colour ring around a thin panel-colour one. */
function drawCursor(ctx, f) {
	const w = Math.max(f.w, 8), x = f.x + (f.w - w) / 2, y = f.d * ROW;
	ctx.strokeStyle = css('--focus');
	ctx.lineWidth = 3;
	ctx.strokeRect(x + 1.5, y + 1.5, w - 4, ROW - 4);
	ctx.strokeStyle = css('--panel');
	ctx.lineWidth = 1;
	ctx.strokeRect(x + 3.5, y + 3.5, w - 8, ROW - 8);
}

function updateSearchShare(re) {
	const out = $('search-share');
	if (!re || !flame || !flame.root) {
		matches = 0;
		share = null;
		out.textContent = '';
		return;
	}
	const { sum, count } = searchStats(re);
	const tot = flame.root.value || flame.total || 0;
	matches = count;
	share = tot ? sum / tot : 0;
	out.textContent = count ?
	    `${count} matching frame${count === 1 ? '' : 's'}: ${pct(sum, tot)} of total (${fmtVal(sum, flame.unit)})` :
	    'no match (0%)';
}

function updateZoomPath() {
	const box = $('zoom-path');
	box.textContent = state.zoom && flame ? 'Zoomed: ' + state.zoom.split(';').join(' › ') : '';
	$('reset').disabled = !state.zoom;
}

function hit(x, y) {
	const d = Math.floor(y / ROW);
	for (const f of frames) {
		if (f.d === d && x >= f.x && x < f.x + f.w) return f;
	}
	return null;
}

function zoomTo(f) {
	const p = pathOf(f);
	set({ zoom: p.length ? p.join(';') : undefined }, { viewOnly: true });
}

/* The lines of frame f's details (tooltip and live region), its name first. */
function frameLines(f) {
	const n = f.n, u = flame.unit, tot = flame.root.value || flame.total;
	const lines = [n.name, `${fmtVal(n.value, u)} · ${pct(n.value, tot)} of total` +
		(f.p ? ` · ${pct(n.value, f.p.n.value)} of parent` : ''),
		`self ${fmtVal(n.self || 0, u)}`];
	if (state.mode === 'diff' && flame.base_total !== undefined) {
		const bv = n.base_value || 0, bt = flame.base_total;
		const dpp = (bt ? 100 * bv / bt : 0);
		const spp = tot ? 100 * n.value / tot : 0;
		lines.push(`baseline ${fmtVal(bv, u)} · ${pct(bv, bt)} of baseline`,
		    `share change ${(spp - dpp >= 0 ? '+' : '') + (spp - dpp).toFixed(2)} points`);
	}
	return lines;
}
function tipKids(lines) {
	return lines.flatMap((l, i) => (i ? [el('br'), l] : [el('b', null, l)]));
}

function flameHover(e) {
	const f = hit(e.offsetX, e.offsetY);
	if ((f && f.n) !== (hover && hover.n)) {
		hover = f;
		renderFlame();
	}
	if (!f) { tooltip(null); return; }
	tooltip(tipKids(frameLines(f)), e.clientX, e.clientY);
}

/* ---- the keyboard cursor ---- */

/* The cursor's frame: the deepest frame drawn on curPath. */
function cursorFrame() {
	if (!frames.length || !flame || !flame.root) return null;
	let n = flame.root, f = frameOf.get(n) || frames[0];
	for (const name of curPath || []) {
		n = (n.children || []).find((c) => c.name === name);
		if (!n || !frameOf.has(n)) break;
		f = frameOf.get(n);
	}
	return f;
}

/* Shows frame f's details below it and in the live region (none: hides them). */
function cursorInfo(f) {
	const live = $('flame-live');
	if (!f) {
		if (!hover) tooltip(null);
		live.textContent = '';
		return;
	}
	const lines = frameLines(f), text = lines.join('; ');
	if (live.textContent !== text) live.textContent = text;
	const r = $('flame').getBoundingClientRect();
	tooltip(tipKids(lines), r.left + Math.max(f.x, 0) - 10, r.top + (f.d + 1) * ROW - 14);
}

/* Shows or hides the cursor (the canvas's .kb class draws its focus ring). */
function showCursor(on) {
	kb = on;
	$('flame').classList.toggle('kb', on);
	if (on && !curPath) curPath = state.zoom ? state.zoom.split(';') : [];
	if (!on) cursorInfo(null);
	renderFlame();
}

/* f's drawn child with the largest value. */
function largestChild(f) {
	let best = null;
	for (const g of frames) {
		if (g.p === f && (!best || g.n.value > best.n.value)) best = g;
	}
	return best;
}

/* The next frame at f's depth towards dir (-1 left, 1 right): a sibling, else the nearest. */
function neighbour(f, dir) {
	let sib = null, near = null;
	for (const g of frames) {
		if (g.d !== f.d || (g.x - f.x) * dir <= 0) continue;
		if (!near || (g.x - near.x) * dir < 0) near = g;
		if (g.p === f.p && (!sib || (g.x - sib.x) * dir < 0)) sib = g;
	}
	return sib || near;
}

/* Scrolls #flame-wrap, then the page, so that frame f's row is visible. */
function cursorIntoView(f) {
	const wrap = $('flame-wrap'), y = f.d * ROW;
	if (y < wrap.scrollTop) wrap.scrollTop = y;
	else if (y + ROW > wrap.scrollTop + wrap.clientHeight) wrap.scrollTop = y + ROW - wrap.clientHeight;
	const top = $('flame').getBoundingClientRect().top + y;
	if (top < 0) scrollBy(0, top - 8);
	else if (top + ROW + 60 > innerHeight) scrollBy(0, top + ROW + 60 - innerHeight);
}

/* Keys on the canvas: arrows move the cursor, Enter/Space zoom, Home: root, Escape: unzoom. */
function flameKey(e) {
	if (e.altKey || e.ctrlKey || e.metaKey) return;
	const f = cursorFrame();
	let to = null;
	switch (e.key) {
	case 'Escape':
		set({ zoom: undefined }, { viewOnly: true });
		break;
	case 'Enter': case ' ':
		if (f) {
			curPath = pathOf(f);
			zoomTo(f);
		}
		break;
	case 'Home': to = frames[0]; break;
	case 'ArrowUp': to = f && f.p; break;
	case 'ArrowDown': to = f && largestChild(f); break;
	case 'ArrowLeft': to = f && neighbour(f, -1); break;
	case 'ArrowRight': to = f && neighbour(f, 1); break;
	default: return;
	}
	e.preventDefault();
	if (to) {
		curPath = pathOf(to);
		cursorIntoView(to);
	}
	showCursor(true);
}

function tooltip(kids, x, y) {
	const t = $('tooltip');
	if (!kids) { t.hidden = true; return; }
	t.textContent = '';
	t.append(...kids);
	t.hidden = false;
	const r = t.getBoundingClientRect();
	t.style.left = Math.max(4, Math.min(x + 14, innerWidth - r.width - 8)) + 'px';
	t.style.top = (y + 16 + r.height > innerHeight ? y - r.height - 10 : y + 16) + 'px';
}

/* ---- top table and sandwich ---- */

function renderTop() {
	const tb = $('top').tBodies[0];
	tb.textContent = '';
	for (const th of document.querySelectorAll('#top th')) {
		const b = th.querySelector('button');
		if (b.dataset.sort === sortKey && b.textContent.indexOf('%') < 0)
			th.setAttribute('aria-sort', sortDir < 0 ? 'descending' : 'ascending');
		else th.removeAttribute('aria-sort');
	}
	if (!top || !top.rows) return;
	const tot = top.total, u = top.unit;
	const q = $('top-filter').value.toLowerCase();
	let rows = top.rows.filter((r) => !q || r.name.toLowerCase().includes(q));
	if (!(sortKey === 'flat' && sortDir < 0)) {
		rows = rows.slice().sort((a, b) => sortDir * (sortKey === 'name' ?
		    a.name.localeCompare(b.name) : a[sortKey] - b[sortKey]));
	}
	const frag = document.createDocumentFragment();
	for (const r of rows) {
		const tr = el('tr', r.name === selectedFn ? { class: 'selected' } : null,
		    el('td', { 'data-flat': String(r.flat) }, fmtVal(r.flat, u)),
		    el('td', null, pct(r.flat, tot)),
		    el('td', { 'data-cum': String(r.cum) }, fmtVal(r.cum, u)),
		    el('td', null, pct(r.cum, tot)),
		    el('td', { class: 'name' }, el('button', { type: 'button', title: 'Show callers and callees' }, r.name)));
		tr.addEventListener('click', () => {
			selectedFn = r.name;
			for (const x of tb.querySelectorAll('tr.selected')) x.classList.remove('selected');
			tr.classList.add('selected');
			loadSandwich();
		});
		frag.append(tr);
	}
	tb.append(frag);
}

/* Nodes named fn with no ancestor of that name, with their callers' names. */
function occurrences(root, fn) {
	const out = [], stack = [];
	const walk = (n) => {
		for (const c of n.children || []) {
			if (c.name === fn) { out.push({ n: c, callers: stack.slice() }); continue; }
			stack.push(c.name);
			walk(c);
			stack.pop();
		}
	};
	walk(root);
	return out;
}

function child(m, name) {
	let c = m.kids.get(name);
	if (!c) m.kids.set(name, c = { name, value: 0, kids: new Map() });
	return c;
}

function mergeInto(dst, n) {
	for (const c of n.children || []) {
		const m = child(dst, c.name);
		m.value += c.value;
		mergeInto(m, c);
	}
}

function treeList(m, total, unit, depth, budget) {
	const ul = el('ul');
	const kids = [...m.kids.values()].sort((a, b) => b.value - a.value);
	for (const k of kids.slice(0, 20)) {
		if (budget.n-- <= 0) break;
		const li = el('li', null, el('span', { class: 'v' }, `${pct(k.value, total)} ${fmtVal(k.value, unit)} `), k.name);
		if (depth < 10 && k.kids.size) li.append(treeList(k, total, unit, depth + 1, budget));
		ul.append(li);
	}
	if (kids.length > 20) ul.append(el('li', { class: 'v' }, `… ${kids.length - 20} more`));
	return ul;
}

const escapeRe = (t) => t.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/*
 * Fetches the flame graph focused on the selected function (pprof's
 * -focus, anchored), whose callers and callees are exact where the view's
 * tree may have folded them into "other"; the view's own focus, or a name
 * past the 256 bytes a pattern may have, keeps the view's tree.
 */
async function loadSandwich() {
	if (sandwichCtrl) sandwichCtrl.abort();
	sandwichCtrl = null;
	renderSandwich();
	if (!selectedFn || !lastView || lastView.focus || (sandwich && sandwich.fn === selectedFn)) return;
	const fn = selectedFn, q = '^' + escapeRe(fn) + '$';
	if (q.length > 256) return;
	const c = sandwichCtrl = new AbortController();
	try {
		const { base_labels, base_from, base_to, ...v } = lastView;
		const f = await api('flamegraph', { ...v, focus: q, max_nodes: 20000 }, c.signal);
		if (fn !== selectedFn || c !== sandwichCtrl) return;
		sandwich = { fn, tree: f };
		renderSandwich();
	} catch { /* the view's tree stays */ }
}

function renderSandwich() {
	const box = $('sandwich');
	box.textContent = '';
	box.append(el('h2', null, 'Callers & callees'));
	if (!selectedFn || !flame || !flame.root) {
		box.append(el('p', { class: 'muted' }, 'Pick a function in the top table.'));
		return;
	}
	const exact = sandwich && sandwich.fn === selectedFn;
	const src = exact ? sandwich.tree : flame;
	const occ = occurrences(src.root, selectedFn);
	const total = occ.reduce((s, o) => s + o.n.value, 0), u = flame.unit;
	box.append(el('p', { 'data-total': String(total), 'data-exact': String(exact) }, el('b', null, selectedFn), el('br'),
	    `${fmtVal(total, u)} (${pct(total, flame.total)} of total) ` +
	    (exact ? 'in every stack through it' : 'in the flame graph shown')));
	if (!occ.length) {
		box.append(el('p', { class: 'muted' }, 'Not in the flame graph (folded into "other" or hidden).'));
		return;
	}
	box.append(el('button', { type: 'button', onclick: () => {
		const q = '^' + escapeRe(selectedFn) + '$';
		$('search').value = q;
		set({ search: q }, { replace: true, viewOnly: true });
	} }, 'Highlight in flame graph'));
	const callers = { name: selectedFn, value: total, kids: new Map() };
	const callees = { name: selectedFn, value: total, kids: new Map() };
	for (const o of occ) {
		let m = callers;
		for (let i = o.callers.length - 1; i >= 0; i--) {
			m = child(m, o.callers[i]);
			m.value += o.n.value;
		}
		mergeInto(callees, o.n);
	}
	box.append(el('h3', null, 'Callers (nearest first)'),
	    callers.kids.size ? el('div', null, treeList(callers, total, u, 0, { n: 300 })) : el('p', { class: 'muted' }, 'none (a root)'),
	    el('h3', null, 'Callees'),
	    callees.kids.size ? el('div', null, treeList(callees, total, u, 0, { n: 300 })) : el('p', { class: 'muted' }, 'none (a leaf)'));
}

/* ---- profiles list ---- */

function renderProfiles(list) {
	const tb = $('profiles').tBodies[0];
	tb.textContent = '';
	if (!list.length) {
		tb.append(el('tr', null, el('td', { colspan: '6', class: 'muted' }, 'No profiles in this window.')));
		return;
	}
	for (const p of list) {
		tb.append(el('tr', null,
		    el('td', null, (p.created_at || '').slice(0, 19).replace('T', ' ')),
		    el('td', null, (p.labels || []).map((l) => l.key + '=' + l.value).join(', ')),
		    el('td', null, String(p.samples)),
		    el('td', null, p.duration_ns ? fmtVal(p.duration_ns, 'nanoseconds') : ''),
		    el('td', null, fmtVal(p.size, 'bytes')),
		    el('td', null, el('a', { class: 'dl', href: '/api/0/profiles/' + encodeURIComponent(p.id),
			download: `${p.service}-${p.type}-${p.id}.pb.gz` }, 'download'))));
	}
	if (list.length >= 200)
		tb.append(el('tr', null, el('td', { colspan: '6', class: 'muted' }, 'Showing the newest 200.')));
}

/* ---- timeline (/api/0/timeline, if profd has it) ---- */

function hideTimeline() {
	timeline = null;
	$('timeline-area').hidden = true;
}

async function loadTimeline(params, sig) {
	if (timelineMissing) return;
	try {
		timeline = await api('timeline', params, sig);
		$('timeline-area').hidden = !(timeline && timeline.points);
		drawTimeline();
	} catch (e) {
		if (e.name === 'AbortError') return;
		if (e.code === 404) timelineMissing = true;
		hideTimeline();
	}
}

function tlDomain() {
	const pts = timeline.points, step = timeline.step || 60;
	let t0 = Infinity, t1 = -Infinity;
	for (const p of pts) { t0 = Math.min(t0, p[0]); t1 = Math.max(t1, p[0] + step); }
	return [t0, t1];
}

function drawTimeline() {
	const cv = $('timeline');
	if (!timeline || !timeline.points || $('timeline-area').hidden) return;
	const W = cv.clientWidth || 600, H = 80, dpr = window.devicePixelRatio || 1;
	cv.width = Math.round(W * dpr);
	cv.height = Math.round(H * dpr);
	const ctx = cv.getContext('2d');
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.clearRect(0, 0, W, H);
	const pts = timeline.points;
	if (!pts.length) return;
	const [t0, t1] = tlDomain(), span = Math.max(t1 - t0, 1), step = timeline.step || 60;
	const max = Math.max(...pts.map((p) => p[1]), 1), ph = H - 16;
	ctx.fillStyle = css('--accent');
	for (const p of pts) {
		const x = (p[0] - t0) / span * W, w = Math.max(step / span * W - 1, 1);
		const h = p[1] / max * ph;
		ctx.fillRect(x, ph - h, w, h);
	}
	ctx.fillStyle = css('--muted');
	ctx.font = '11px system-ui, sans-serif';
	ctx.textBaseline = 'bottom';
	ctx.fillText(fmtUTC(t0).replace('T', ' '), 2, H);
	const end = fmtUTC(t1).replace('T', ' ');
	ctx.fillText(end, W - ctx.measureText(end).width - 2, H);
	if (tlDrag) {
		ctx.fillStyle = css('--sel');
		const a = Math.min(tlDrag.x0, tlDrag.x1), b = Math.max(tlDrag.x0, tlDrag.x1);
		ctx.fillRect(a, 0, b - a, ph);
	}
}

function bindTimeline() {
	const cv = $('timeline');
	const xOf = (e) => Math.max(0, Math.min(cv.clientWidth, e.offsetX));
	cv.addEventListener('pointerdown', (e) => {
		if (!timeline) return;
		tlDrag = { x0: xOf(e), x1: xOf(e) };
		cv.setPointerCapture(e.pointerId);
	});
	cv.addEventListener('pointermove', (e) => {
		if (tlDrag) { tlDrag.x1 = xOf(e); drawTimeline(); return; }
		if (!timeline || !timeline.points.length) return;
		const [t0, t1] = tlDomain(), t = t0 + xOf(e) / cv.clientWidth * (t1 - t0);
		const p = timeline.points.reduce((a, b) => (Math.abs(b[0] - t) < Math.abs(a[0] - t) ? b : a));
		tooltip([fmtUTC(p[0]).replace('T', ' ') + ' UTC', el('br'),
			`${fmtVal(p[1], timeline.unit)} · ${p[2]} profiles`], e.clientX, e.clientY);
	});
	cv.addEventListener('pointerleave', () => tooltip(null));
	cv.addEventListener('pointerup', () => {
		const d = tlDrag;
		tlDrag = null;
		if (!d || Math.abs(d.x1 - d.x0) < 4) { drawTimeline(); return; }
		const [t0, t1] = tlDomain(), W = cv.clientWidth;
		const a = t0 + Math.min(d.x0, d.x1) / W * (t1 - t0), b = t0 + Math.max(d.x0, d.x1) / W * (t1 - t0);
		set({ range: undefined, from: fmtUTC(Math.floor(a)), to: fmtUTC(Math.ceil(b)), zoom: undefined });
	});
}

/* ---- test hooks and start ---- */

window.profdUI = {
	frameAt(name) {
		const f = frames.find((g) => g.n.name === name);
		return f ? { x: f.x, y: f.d * ROW, w: f.w, h: ROW } : null;
	},
	cursor() {
		const f = kb ? cursorFrame() : null;
		return f ? f.n.name : null;
	},
	state() {
		return { ...state, busy, loads, idle: !busy && loadedKey === dataKey(state),
			error: lastError, frames: frames.length, matches, share,
			total: flame ? flame.total : null, unit: flame ? flame.unit : null,
			diff: !!(flame && flame.base_total !== undefined),
			sampleType: $('sample-type').value,
			topFirst: top && top.rows && top.rows[0] ? top.rows[0].name : null,
			timeline: !$('timeline-area').hidden,
			timelineTotal: timeline ? timeline.total : null };
	},
};

bind();
syncControls();
load();
