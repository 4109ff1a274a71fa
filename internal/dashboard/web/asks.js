// Calls the session's policy holds for a person: each shows as a prompt
// with who calls, which tool and the exact arguments (as the daemon wrote
// them: indented, hidden characters escaped; placed as text), and the
// Commander's three answers. The first answer anywhere — this page,
// another, the Commander, the calling client — decides; the daemon then
// closes the prompt on every page, saying who answered and in how long.
import { h, fill, $, clock } from './dom.js';

// How long a closed prompt stays, saying why, before it goes.
const closedFor = 8000;

// approvals returns the handlers of the event stream's approval events.
// post(id, answer) sends an answer; message(text, kind) tells the person.
export function approvals(post, message) {
  const shown = new Map(); // id → {p, el, closed}
  let ticker = null;

  function update() {
    const box = $('#approvals');
    const waiting = [...shown.values()].filter((x) => !x.closed).length;
    box.hidden = shown.size === 0;
    document.title = waiting ? `(${waiting}) nerve: ${waiting === 1 ? 'a call waits' : 'calls wait'} for you` : 'nerve';
    if (waiting && !ticker) ticker = setInterval(tick, 1000);
    if (!waiting && ticker) { clearInterval(ticker); ticker = null; }
    tick();
  }

  function tick() {
    for (const x of shown.values()) {
      if (x.closed || !x.p.expires) continue;
      const s = Math.max(0, Math.round((new Date(x.p.expires) - Date.now()) / 1000));
      x.el.querySelector('.left').textContent = ` · ${Math.floor(s / 60)}:${String(s % 60).padStart(2, '0')} left`;
    }
  }

  async function answer(x, what) {
    const buttons = [...x.el.querySelectorAll('.answers button')];
    for (const b of buttons) b.disabled = true;
    try {
      await post(x.p.id, what);
    } catch (e) {
      message(`${x.p.node}.${x.p.tool}: ${e.message}`, 'error');
      if (!x.closed) for (const b of buttons) b.disabled = false;
    }
  }

  function card(p) {
    const x = { p, closed: false };
    const kb = p.size >= 1024 ? `${Math.round(p.size / 1024)} KiB` : `${p.size} bytes`;
    x.el = h('div', { class: 'approval', role: 'alertdialog', 'aria-label': `${p.caller} wants to call ${p.node}.${p.tool}`, dataset: { id: p.id, node: p.node, tool: p.tool, state: 'waiting' } },
      h('div', { class: 'approval-head' },
        h('span', { class: 'caller' }, p.caller), ' wants to call ', h('code', { class: 'call' }, `${p.node}.${p.tool}`)),
      h('div', { class: 'sub' }, `the session's policy asks first${p.rule ? ': ' + p.rule : ''} · held at ${clock(p.asked)}`,
        p.expires ? h('span', { class: 'left' }) : null),
      h('div', { class: 'label' }, 'with these arguments, exactly:'),
      h('pre', { class: 'args' }, p.arguments),
      p.cut ? h('p', { class: 'cut' }, `The arguments are ${kb}: only the first 256 KiB show. Deny if you cannot tell what the call does.`) : null,
      h('div', { class: 'answers' },
        h('button', { class: 'primary', dataset: { answer: 'allow' }, onclick: () => answer(x, 'allow') }, 'Allow once'),
        h('button', { dataset: { answer: 'remember' }, title: 'this same call (same tool, same arguments) runs without asking', onclick: () => answer(x, 'remember') }, `Allow for ${p.remember} minutes`),
        h('button', { class: 'deny', dataset: { answer: 'deny' }, onclick: () => answer(x, 'deny') }, 'Deny')));
    return x;
  }

  function add(p) {
    if (shown.has(p.id)) return;
    const x = card(p);
    shown.set(p.id, x);
    $('#approvals').append(x.el);
    update();
  }

  // all takes the prompts on show as the daemon has them (a stream that
  // opened, or lost events): the others went meanwhile.
  function all(list) {
    const ids = new Set(list.map((p) => p.id));
    for (const [id, x] of shown) {
      if (!ids.has(id) && !x.closed) { x.el.remove(); shown.delete(id); }
    }
    for (const p of list) add(p);
    update();
  }

  function closed({ id, answered, why }) {
    const x = shown.get(id);
    if (!x || x.closed) return;
    x.closed = true;
    x.el.dataset.state = answered ? 'answered' : 'withdrawn';
    x.el.setAttribute('role', 'status');
    x.el.querySelector('.left')?.remove();
    fill(x.el.querySelector('.answers'), h('span', { class: 'outcome' }, why));
    setTimeout(() => { x.el.remove(); shown.delete(id); update(); }, closedFor);
    update();
  }

  return { all, add, closed };
}
