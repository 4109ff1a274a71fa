// nerve's dashboard: one session's nodes, tools, calls and graph runs,
// and the calls its policy holds for a person, live from the daemon's
// event stream (server-sent events); actions are POSTs that carry the
// visit's CSRF token.
import { h, fill, $, ms, clock, short } from './dom.js';
import { toolForm } from './form.js';
import { renderResult, renderFailure } from './result.js';
import { renderRun as runView } from './dag.js';
import { approvals } from './asks.js';

const params = new URLSearchParams(location.search);
const session = params.get('session') || 'default';
const base = `api/sessions/${encodeURIComponent(session)}`;

const state = {
  csrf: '',
  nodes: new Map(), // id → node view
  selected: null, // node whose tools show
  tools: null, // {node, list} or {node, error}
  tool: null, // name of the tool whose form shows
  calls: [],
  runs: new Map(), // "node/run" → {node, record, steps}
  shown: null, // "node/run" on show
  pinned: false, // the person chose the run on show: new runs do not replace it
  step: null, // step whose details show
  form: null, // the node and tool whose form shows
};

// ---- talking to the daemon

async function api(path, body) {
  const init = body === undefined ? {} : {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Nerve-CSRF': state.csrf },
    body: JSON.stringify(body),
  };
  const resp = await fetch(path, { credentials: 'same-origin', cache: 'no-store', ...init });
  let data = null;
  try { data = await resp.json(); } catch { /* not JSON */ }
  if (resp.status === 401) ended();
  if (!resp.ok) throw new Error(data?.error || `${resp.status} ${resp.statusText}`);
  return data;
}

function plural(n, what) { return `${n} ${what}${n === 1 ? '' : 's'}`; }

function nodePath(id) { return `${base}/nodes/${encodeURIComponent(id)}`; }

function message(text, kind = 'info', link, tag) {
  const box = $('#messages');
  // Only a web address becomes a link (a sign-in's comes from the
  // server's metadata); anything else shows as text.
  const web = link && /^https?:\/\//i.test(link);
  const el = h('div', { class: 'message ' + kind, role: kind === 'error' ? 'alert' : 'status', dataset: tag ? { tag } : undefined },
    h('span', {}, text), web ? h('a', { href: link, target: '_blank', rel: 'noopener noreferrer' }, link) : link ? h('code', {}, link) : null,
    h('button', { class: 'close', title: 'dismiss', onclick: () => el.remove() }, '×'));
  box.prepend(el);
  while (box.children.length > 4) box.lastChild.remove();
  if (kind !== 'error' && !link) setTimeout(() => el.remove(), 8000);
}

function ended() {
  setStatus('ended', 'visit ended');
  fill($('#messages'), h('div', { class: 'message error', role: 'alert' },
    'This page is no longer let in (the daemon restarted, or the visit expired). Open the dashboard again with ', h('code', {}, 'nerve ui'), '.'));
}

function setStatus(cls, text) {
  const el = $('#status');
  el.className = 'status ' + cls;
  el.textContent = text;
}

// ---- calls held for a person (asks.js)

const asks = approvals((id, answer) => api(`${base}/approvals/${encodeURIComponent(id)}`, { answer }), message);

// ---- nodes

const opsFor = {
  start: (n) => ['STOPPED', 'CREATED', 'ERROR'].includes(n.state),
  stop: (n) => !['STOPPED', 'STOPPING'].includes(n.state),
  restart: () => true,
};

const signInShown = new Set();

function signInAt(id, url) {
  if (signInShown.has(url)) return;
  signInShown.add(url);
  message(`To sign in for node ${id}, open: `, 'info', url, 'sign-in');
}

async function nodeOp(id, op, button) {
  button.disabled = true;
  try {
    if (op === 'signin') {
      const r = await api(`${nodePath(id)}/signin`, {});
      if (r.url) signInAt(id, r.url);
      else if (r.pending) message(`${id}: signing in… the address to open follows`);
      else message(`${id}: already signed in; restarted it`);
      return;
    }
    const v = await api(`${nodePath(id)}/${op}`, {});
    upsertNode(v);
  } catch (e) {
    message(`${op} ${id}: ${e.message}`, 'error');
  } finally {
    button.disabled = false;
  }
}

function nodeRow(n) {
  const ops = ['start', 'stop', 'restart'].map((op) => h('button', {
    class: 'op', dataset: { op }, disabled: !opsFor[op](n), title: `${op} node ${n.id}`,
    onclick: (e) => { e.stopPropagation(); nodeOp(n.id, op, e.currentTarget); },
  }, op));
  if (n.signin) {
    ops.push(h('button', { class: 'op', dataset: { op: 'signin' }, title: `sign in to node ${n.id}'s server (OAuth)`,
      onclick: (e) => { e.stopPropagation(); nodeOp(n.id, 'signin', e.currentTarget); } }, 'sign in'));
  }
  const busy = n.in_flight > 0 ? ` (${n.in_flight} running)` : '';
  return h('tr', {
    dataset: { node: n.id, state: n.state }, class: n.id === state.selected ? 'selected' : '',
    onclick: () => select(n.id),
  },
  h('td', { class: 'id' }, h('a', { href: '#', onclick: (e) => { e.preventDefault(); select(n.id); } }, n.id),
    n.summary ? h('div', { class: 'summary' }, short(n.summary, 60)) : null),
  h('td', { class: 'kind' }, n.kind),
  h('td', {}, h('span', { class: 'state badge s-' + n.state }, n.state)),
  h('td', { class: 'num tools' }, String(n.tools)),
  h('td', { class: 'num' }, String(n.calls) + (n.failures ? ` / ${n.failures} failed` : '') + busy),
  h('td', { class: 'error', title: n.error || '' }, short(n.error || '', 90)),
  h('td', { class: 'ops' }, ops));
}

function renderNodes() {
  const ids = [...state.nodes.keys()].sort();
  fill($('#nodes tbody'), ids.map((id) => nodeRow(state.nodes.get(id))));
  $('#no-nodes').hidden = ids.length > 0;
  fill($('#list-nodes'), ids.map((id) => h('option', { value: id })));
  renderRunList();
}

function upsertNode(v) {
  const old = state.nodes.get(v.id);
  state.nodes.set(v.id, v);
  renderNodes();
  // The tools are listed again when they may have changed: a new count,
  // or the node became usable or not (not READY ⇄ BUSY, which every call
  // makes).
  const usable = (n) => n && ['READY', 'BUSY'].includes(n.state);
  if (v.id === state.selected && (!old || old.tools !== v.tools || usable(old) !== usable(v))) loadTools(v.id);
}

// ---- tools

function select(id) {
  if (state.selected !== id) {
    state.selected = id;
    state.tool = null;
  }
  renderNodes();
  loadTools(id);
}

async function loadTools(id) {
  $('#tools-node').textContent = `of ${id}`;
  const n = state.nodes.get(id);
  if (n && ['STOPPED', 'STOPPING'].includes(n.state)) {
    state.tools = { node: id, error: `node ${id} is ${n.state}: start it to see its tools` };
    renderTools();
    return;
  }
  try {
    const list = await api(`${nodePath(id)}/tools`);
    if (state.selected !== id) return;
    state.tools = { node: id, list: list || [] };
  } catch (e) {
    if (state.selected !== id) return;
    state.tools = { node: id, error: e.message };
  }
  renderTools();
}

function renderTools() {
  const t = state.tools;
  if (!t) return;
  if (t.error || t.list.length === 0) {
    fill($('#tools'), h('p', { class: 'empty' }, t.error || `node ${t.node} offers no tools`));
    state.form = null;
    fill($('#tool'));
    return;
  }
  fill($('#tools'), h('div', { class: 'pills' }, t.list.map((tool) => h('button', {
    class: 'pill' + (tool.name === state.tool ? ' on' : ''), dataset: { tool: tool.name },
    title: tool.description || tool.name,
    onclick: () => { state.tool = tool.name; renderTools(); },
  }, tool.name))));
  const tool = t.list.find((x) => x.name === state.tool);
  if (!tool) { state.form = null; fill($('#tool')); return; }
  const node = t.node;
  // The form on show stays, with what was typed and the last result,
  // while the tool is the same.
  const key = node + '\n' + JSON.stringify(tool);
  if (state.form === key) return;
  state.form = key;
  const out = h('div', { id: 'result-box' });
  const form = toolForm(tool, async (collect, button) => {
    let args;
    try { args = collect(); } catch (e) { fill(out, renderFailure(String(e))); return; }
    button.disabled = true;
    $('#call-state').textContent = 'calling…';
    const t0 = performance.now();
    try {
      const r = await api(`${nodePath(node)}/call`, { tool: tool.name, arguments: args });
      fill(out, renderResult(r.result || {}));
    } catch (e) {
      fill(out, renderFailure(e.message));
    } finally {
      button.disabled = false;
      $('#call-state').textContent = `took ${ms(performance.now() - t0)}`;
    }
  });
  fill($('#tool'), h('div', { class: 'tool-head' }, h('b', {}, `${node}.${tool.name}`), tool.title && tool.title !== tool.name ? ' — ' + tool.title : null),
    tool.description ? h('p', { class: 'desc' }, tool.description) : null, form, out);
}

// ---- calls

const filters = { node: $('#filter-node'), tool: $('#filter-tool'), caller: $('#filter-caller') };
for (const el of Object.values(filters)) el.addEventListener('input', renderCalls);

function outcome(c) {
  if (c.error) return h('span', { class: 'bad', title: c.error }, 'failed: ' + short(c.error, 80));
  if (c.is_error) return h('span', { class: 'bad', title: c.result || '' }, 'error: ' + short(c.result, 80));
  return h('span', { class: 'ok', title: c.result || '' }, short(c.result || 'ok', 90));
}

function renderCalls() {
  const f = Object.fromEntries(Object.entries(filters).map(([k, el]) => [k, el.value.trim().toLowerCase()]));
  const match = (c) => (!f.node || c.node.toLowerCase().includes(f.node)) &&
    (!f.tool || c.tool.toLowerCase().includes(f.tool)) &&
    (!f.caller || (c.caller || '').toLowerCase().includes(f.caller));
  const shown = state.calls.filter(match).slice(-200).reverse();
  fill($('#calls tbody'), shown.map((c) => h('tr', { dataset: { node: c.node, tool: c.tool, caller: c.caller || '' }, class: c.error || c.is_error ? 'bad' : '' },
    h('td', { class: 'time' }, clock(c.time)),
    h('td', { class: 'caller' }, c.caller || '?'),
    h('td', {}, c.node),
    h('td', {}, c.tool),
    h('td', { class: 'num' }, ms(c.ms)),
    h('td', { class: 'outcome' }, outcome(c)),
    h('td', { class: 'args', title: c.args || '' }, h('code', {}, short(c.args || '', 70))))));
  $('#no-calls').hidden = state.calls.length > 0;
  $('#calls-count').textContent = state.calls.length ? `${shown.length} of ${state.calls.length}` : '';
  const uniq = (k) => [...new Set(state.calls.map((c) => c[k]).filter(Boolean))].sort();
  fill($('#list-tools'), uniq('tool').map((v) => h('option', { value: v })));
  fill($('#list-callers'), uniq('caller').map((v) => h('option', { value: v })));
}

// ---- graph runs

function renderRunList() {
  const graphs = [...state.nodes.values()].filter((n) => n.kind === 'graph').sort((a, b) => a.id.localeCompare(b.id));
  if (graphs.length === 0) {
    fill($('#runs'), h('p', { class: 'empty' }, 'No graph nodes in this session.'));
    return;
  }
  fill($('#runs'), graphs.map((g) => h('div', { class: 'graph-runs', dataset: { graph: g.id } },
    h('div', { class: 'graph-name' }, h('b', {}, g.id), h('span', { class: 'sub' }, ` ${g.summary || ''} · ${(g.runs || []).length ? plural(Math.max(g.details?.run_count ?? 0, g.runs.length), 'run') : 'no runs yet'}`)),
    h('ul', { class: 'runs' }, (g.runs || []).slice(0, 8).map((r) => {
      const key = `${g.id}/${r.id}`;
      return h('li', { class: key === state.shown ? 'on' : '' }, h('a', {
        href: '#', dataset: { run: r.id, state: r.state },
        onclick: (e) => { e.preventDefault(); showRun(g.id, r.id, true); },
      }, h('span', { class: 'badge run-' + r.state }, r.state), ' ', clock(r.started), r.state !== 'running' ? h('span', { class: 'sub' }, ' ' + ms(r.ms)) : null));
    })))));
}

async function showRun(node, run, pinned) {
  const key = `${node}/${run}`;
  state.shown = key;
  state.pinned = pinned;
  state.step = null;
  try {
    const v = await api(`${nodePath(node)}/runs/${encodeURIComponent(run)}`);
    const old = state.runs.get(key);
    state.runs.set(key, { ...v, steps: v.steps || old?.steps });
  } catch (e) {
    message(`run ${run}: ${e.message}`, 'error');
  }
  renderRun();
  renderRunList();
}

function onRun(v) {
  const key = `${v.node}/${v.record.id}`;
  const old = state.runs.get(key);
  state.runs.set(key, { ...v, steps: v.steps || old?.steps });
  // The graph's list of runs, as of its last event, may not have it yet.
  const g = state.nodes.get(v.node);
  if (g) {
    const r = v.record;
    const sum = { id: r.id, state: r.state, started: r.started, ms: r.ms, error: r.error };
    const i = (g.runs ||= []).findIndex((x) => x.id === r.id);
    if (i < 0) g.runs.unshift(sum); else g.runs[i] = sum;
  }
  const shownRec = state.runs.get(state.shown)?.record;
  // A new run shows unless the person chose one, or the one on show is
  // still running.
  if (key !== state.shown && !state.pinned && (!shownRec || shownRec.state !== 'running')) {
    state.shown = key;
    state.step = null;
  }
  renderRunList();
  if (key === state.shown) renderRun();
}

function renderRun() {
  const v = state.runs.get(state.shown);
  if (!v) { fill($('#run')); return; }
  fill($('#run'), runView(v, state.step, (id) => { state.step = state.step === id ? null : id; renderRun(); }));
}

// ---- the event stream

function connect() {
  const es = new EventSource(`${base}/events`);
  const on = (ev, f) => es.addEventListener(ev, (e) => f(JSON.parse(e.data)));
  es.onopen = () => setStatus('live', 'live');
  es.onerror = () => {
    if (es.readyState === EventSource.CLOSED) {
      // Refused (401: the visit ended), or the session is gone.
      api('api/hello').then(() => setStatus('down', 'disconnected'), () => {});
    } else {
      setStatus('connecting', 'reconnecting…');
    }
  };
  on('nodes', (list) => {
    state.nodes = new Map(list.map((n) => [n.id, n]));
    renderNodes();
    if (state.selected && state.nodes.has(state.selected)) loadTools(state.selected);
  });
  on('node', upsertNode);
  on('node_removed', ({ id }) => {
    state.nodes.delete(id);
    if (state.selected === id) { state.selected = null; state.tools = null; fill($('#tools')); state.form = null; fill($('#tool')); }
    renderNodes();
  });
  on('calls', (list) => { state.calls = list; renderCalls(); });
  on('call', (c) => {
    state.calls.push(c);
    if (state.calls.length > 500) state.calls.splice(0, state.calls.length - 500);
    renderCalls();
  });
  on('run', onRun);
  on('signin', (r) => {
    if (r.url) signInAt(r.node, r.url);
    else message(r.ok ? `${r.node}: signed in; restarted it` : `${r.node}: sign-in failed: ${r.error}`,
      r.ok ? 'info' : 'error', undefined, r.ok ? 'signed-in' : 'sign-in-failed');
  });
  on('approvals', asks.all);
  on('approval', asks.add);
  on('approval_closed', asks.closed);
  on('closed', () => { setStatus('down', 'session closed'); es.close(); });
}

async function main() {
  $('#session').textContent = session;
  try {
    const hi = await api('api/hello');
    state.csrf = hi.csrf;
    $('#version').textContent = hi.version ? `nerve ${hi.version}` : '';
  } catch (e) {
    if (!$('#status').classList.contains('ended')) message(`the dashboard did not load: ${e.message}`, 'error');
    return;
  }
  connect();
}

main();
