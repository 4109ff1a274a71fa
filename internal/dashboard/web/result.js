// A tool's result as the page shows it: text (JSON indented), images as
// data: URLs, structured content as JSON; the rest named.
import { h, pretty } from './dom.js';

const imageTypes = /^image\/(png|jpeg|gif|webp|bmp|avif)$/;
const base64 = /^[A-Za-z0-9+/]*={0,2}$/;

function content(c) {
  switch (c.type) {
    case 'text':
      return h('pre', { class: 'text' }, pretty(c.text ?? ''));
    case 'image':
      if (imageTypes.test(c.mimeType || '') && base64.test(c.data || '')) {
        return h('img', { class: 'image', alt: 'image result (' + c.mimeType + ')', src: `data:${c.mimeType};base64,${c.data}` });
      }
      return h('p', { class: 'note' }, `an image of type ${c.mimeType || '?'} the page does not show`);
    case 'audio':
      return h('p', { class: 'note' }, `audio (${c.mimeType || '?'}, ${Math.floor(((c.data || '').length * 3) / 4)} bytes)`);
    case 'resource_link':
      return h('p', { class: 'note' }, 'resource link: ', h('code', {}, c.uri || ''), c.name ? ` (${c.name})` : '');
    case 'resource': {
      const r = c.resource || {};
      return h('div', { class: 'resource' }, h('p', { class: 'note' }, 'resource ', h('code', {}, r.uri || '')),
        r.text !== undefined ? h('pre', { class: 'text' }, pretty(r.text)) : h('p', { class: 'note' }, `${r.mimeType || 'binary'} data`));
    }
    default:
      return h('pre', { class: 'text' }, JSON.stringify(c, null, 2));
  }
}

// renderResult shows a CallToolResult.
export function renderResult(res) {
  const parts = (res.content || []).map(content);
  if (res.structuredContent !== undefined && res.structuredContent !== null) {
    parts.push(h('div', { class: 'structured' }, h('div', { class: 'label' }, 'structured content'),
      h('pre', { class: 'json' }, JSON.stringify(res.structuredContent, null, 2))));
  }
  if (parts.length === 0) parts.push(h('p', { class: 'note' }, '(no output)'));
  return h('div', { id: 'result', class: res.isError ? 'result is-error' : 'result', dataset: { outcome: res.isError ? 'error' : 'ok' } },
    h('div', { class: 'label' }, res.isError ? 'the tool reported an error' : 'result'), parts);
}

// renderFailure shows a call that could not be made.
export function renderFailure(msg) {
  return h('div', { id: 'result', class: 'result failed', dataset: { outcome: 'failed' } },
    h('div', { class: 'label' }, 'the call failed'), h('pre', { class: 'text' }, msg));
}
