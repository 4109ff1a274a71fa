// Building the page's elements. Every text goes in as a text node and
// every attribute through setAttribute: no string is ever parsed as HTML
// (the page's Content-Security-Policy enforces it with Trusted Types).

const SVG = 'http://www.w3.org/2000/svg';

function build(el, attrs, children) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

// h makes an HTML element: h('td', {class: 'x'}, 'text', child).
export function h(tag, attrs, ...children) {
  return build(document.createElement(tag), attrs, children);
}

// s makes an SVG element.
export function s(tag, attrs, ...children) {
  return build(document.createElementNS(SVG, tag), attrs, children);
}

// fill replaces el's children.
export function fill(el, ...children) {
  el.replaceChildren();
  return build(el, {}, children);
}

export function $(sel) { return document.querySelector(sel); }

// ms shows a duration in milliseconds.
export function ms(v) {
  if (v === undefined || v === null) return '';
  if (v < 1) return v.toFixed(2) + ' ms';
  if (v < 1000) return Math.round(v) + ' ms';
  if (v < 60000) return (v / 1000).toFixed(v < 10000 ? 2 : 1) + ' s';
  const m = Math.floor(v / 60000);
  return m + ' min ' + Math.round((v % 60000) / 1000) + ' s';
}

// clock shows a time of day with milliseconds.
export function clock(t) {
  const d = new Date(t);
  if (isNaN(d)) return '';
  const p = (n, w = 2) => String(n).padStart(w, '0');
  return `${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}.${p(d.getMilliseconds(), 3)}`;
}

// short cuts text to n characters.
export function short(t, n) {
  t = String(t ?? '');
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

// pretty shows text that is JSON indented, else as it is.
export function pretty(t) {
  if (typeof t !== 'string') return JSON.stringify(t, null, 2);
  const x = t.trim();
  if ((x.startsWith('{') && x.endsWith('}')) || (x.startsWith('[') && x.endsWith(']'))) {
    try { return JSON.stringify(JSON.parse(x), null, 2); } catch { /* not JSON */ }
  }
  return t;
}
