// A graph run drawn as its graph: steps in columns by dependency depth
// (a step is one column right of the deepest step it waits for), edges
// from each step to those that wait for it, each step coloured by state
// with its time and the start of its result.
import { h, s, ms, short, pretty } from './dom.js';

const W = 190, H = 76, GX = 56, GY = 18, PAD = 16;

// layout gives each step its column and row.
function layout(steps) {
  const byId = new Map(steps.map((st) => [st.id, st]));
  const level = new Map();
  const depth = (st, seen) => {
    if (level.has(st.id)) return level.get(st.id);
    if (seen.has(st.id)) return 0; // a cycle: the graph kind refuses them
    seen.add(st.id);
    let l = 0;
    for (const n of st.needs || []) {
      const d = byId.get(n);
      if (d) l = Math.max(l, depth(d, seen) + 1);
    }
    level.set(st.id, l);
    return l;
  };
  steps.forEach((st) => depth(st, new Set()));
  const cols = [];
  for (const st of steps) {
    const l = level.get(st.id);
    (cols[l] ||= []).push(st.id);
  }
  const pos = new Map();
  cols.forEach((col, c) => col.forEach((id, r) => pos.set(id, { x: PAD + c * (W + GX), y: PAD + r * (H + GY) })));
  const rows = Math.max(1, ...cols.map((c) => c.length));
  return { pos, width: PAD * 2 + cols.length * W + (cols.length - 1) * GX, height: PAD * 2 + rows * H + (rows - 1) * GY };
}

function stepLine(rec) {
  if (!rec) return 'pending';
  if (rec.state === 'started') return rec.attempts > 1 ? `running (attempt ${rec.attempts})` : 'running…';
  const t = rec.ms ? ' · ' + ms(rec.ms) : '';
  return rec.state + t;
}

function preview(rec) {
  if (!rec) return '';
  if (rec.error && rec.state !== 'skipped') return rec.error;
  if (rec.result) return (rec.result.text ?? '').replace(/\s+/g, ' ');
  if (rec.error) return rec.error;
  return '';
}

// renderRun draws view ({node, record, steps}); selected names the step
// whose details show; onStep(id) is told of a click on a step.
export function renderRun(view, selected, onStep) {
  const rec = view.record || {};
  const recSteps = new Map((rec.steps || []).map((st) => [st.id, st]));
  // Without the graph's steps (an older record), the record's steps in
  // a row.
  const steps = view.steps && view.steps.length ? view.steps : (rec.steps || []).map((st) => ({ id: st.id }));
  const { pos, width, height } = layout(steps);

  const edges = [];
  for (const st of steps) {
    const to = pos.get(st.id);
    for (const n of st.needs || []) {
      const from = pos.get(n);
      if (!from) continue;
      const x1 = from.x + W, y1 = from.y + H / 2, x2 = to.x, y2 = to.y + H / 2;
      const state = recSteps.get(n)?.state || 'pending';
      edges.push(s('path', { class: 'edge e-' + state, d: `M${x1},${y1} C${x1 + GX / 2},${y1} ${x2 - GX / 2},${y2} ${x2 - 4},${y2}`, 'marker-end': 'url(#arrow)' }));
    }
  }
  const boxes = steps.map((st) => {
    const p = pos.get(st.id);
    const r = recSteps.get(st.id);
    const state = r?.state || 'pending';
    const g = s('g', {
      class: 'step st-' + state + (st.id === selected ? ' selected' : ''), transform: `translate(${p.x},${p.y})`,
      dataset: { step: st.id, state }, tabindex: 0, role: 'button',
      onclick: () => onStep(st.id),
      onkeydown: (e) => { if (e.key === 'Enter' || e.key === ' ') onStep(st.id); },
    },
    s('title', {}, `${st.id}${st.call ? ' → ' + st.call : ''}: ${stepLine(r)}`),
    s('rect', { width: W, height: H, rx: 7 }),
    s('rect', { class: 'bar', width: 6, height: H, rx: 3 }),
    s('text', { x: 14, y: 19, class: 'id' }, short(st.id, 24)),
    s('text', { x: 14, y: 34, class: 'call' }, short(st.call || '', 28)),
    s('text', { x: 14, y: 51, class: 'line' }, stepLine(r)),
    s('text', { x: 14, y: 67, class: 'preview' }, short(preview(r), 28)));
    return g;
  });
  const svg = s('svg', { class: 'dag', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': 'graph run ' + (rec.id || '') },
    s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 10 10', refX: 9, refY: 5, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' },
      s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrowhead' }))),
    edges, boxes);
  // Shrunk to fit its panel down to 60%; a wider graph scrolls.
  svg.style.minWidth = Math.round(width * 0.6) + 'px';

  const head = h('div', { class: 'run-head' },
    h('span', { class: 'badge run-' + (rec.state || '') }, rec.state || '?'),
    h('b', {}, view.node), ' ', h('code', { class: 'run-id' }, rec.id || ''),
    rec.started ? h('span', { class: 'sub' }, ' started ' + new Date(rec.started).toLocaleTimeString()) : null,
    rec.state && rec.state !== 'running' ? h('span', { class: 'sub' }, ' · took ' + ms(rec.ms)) : null,
    rec.resumed ? h('span', { class: 'sub' }, ` · resumed ${rec.resumed}×`) : null);
  const extra = [];
  if (rec.inputs && Object.keys(rec.inputs).length) extra.push(h('div', { class: 'kv' }, h('span', { class: 'label' }, 'inputs'), h('code', {}, short(JSON.stringify(rec.inputs), 160))));
  if (rec.error) extra.push(h('div', { class: 'kv error' }, h('span', { class: 'label' }, 'error'), h('span', {}, rec.error)));
  if (rec.output !== undefined && rec.output !== null) extra.push(h('div', { class: 'kv' }, h('span', { class: 'label' }, 'output'), h('pre', { class: 'output' }, short(pretty(rec.output), 2000))));

  const sel = selected && recSteps.get(selected);
  const spec = selected && steps.find((st) => st.id === selected);
  const details = spec ? h('div', { class: 'step-details', dataset: { step: selected } },
    h('div', { class: 'kv' }, h('span', { class: 'label' }, 'step'), h('b', {}, selected), spec.call ? h('code', {}, ' ' + spec.call) : null,
      h('span', { class: 'sub' }, ' ' + stepLine(sel))),
    spec.needs?.length ? h('div', { class: 'kv' }, h('span', { class: 'label' }, 'waits for'), spec.needs.join(', ')) : null,
    sel?.args ? h('div', { class: 'kv' }, h('span', { class: 'label' }, 'arguments'), h('pre', {}, pretty(JSON.stringify(sel.args)))) : null,
    sel?.result ? h('div', { class: 'kv' }, h('span', { class: 'label' }, 'result'), h('pre', {}, pretty(sel.result.text ?? JSON.stringify(sel.result)))) : null,
    sel?.error ? h('div', { class: 'kv error' }, h('span', { class: 'label' }, 'error'), h('pre', {}, sel.error)) : null) : null;

  return h('div', { class: 'run-view', dataset: { run: rec.id || '', state: rec.state || '' } },
    head, extra, h('div', { class: 'dag-scroll' }, svg), details);
}
