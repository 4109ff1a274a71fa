// A form for a tool, made from its input schema: strings, numbers,
// integers and booleans as inputs, enums as selects, arrays, objects and
// anything else as JSON text areas; required fields marked, defaults
// filled in.
import { h } from './dom.js';

// kind is how a property is edited.
function kind(p) {
  if (Array.isArray(p.enum) && p.enum.length > 0) return 'enum';
  let t = p.type;
  if (Array.isArray(t)) t = t.filter((x) => x !== 'null')[0];
  switch (t) {
    case 'string': case 'number': case 'integer': case 'boolean': return t;
    default: return 'json';
  }
}

function typeLabel(p, k) {
  if (k === 'enum') return 'one of';
  if (k === 'json') {
    const t = Array.isArray(p.type) ? p.type.join('|') : p.type;
    return (t || 'any') + ', JSON';
  }
  return k;
}

// field makes one property's label and input; read returns its value
// ({omit: true} to leave it out) or throws a message.
function field(name, p, required) {
  const k = kind(p);
  const id = 'arg-' + name;
  const has = Object.prototype.hasOwnProperty.call(p, 'default');
  let input;
  let read;
  switch (k) {
    case 'enum': {
      input = h('select', { id, name },
        required ? null : h('option', { value: '' }, '(none)'),
        p.enum.map((v, i) => h('option', { value: String(i), selected: has && v === p.default }, String(v))));
      if (required && !has) input.selectedIndex = 0;
      read = () => (input.value === '' ? { omit: true } : { value: p.enum[Number(input.value)] });
      break;
    }
    case 'boolean': {
      input = h('input', { id, name, type: 'checkbox', checked: has && p.default === true });
      read = () => (!required && !has && !input.checked ? { omit: true } : { value: input.checked });
      break;
    }
    case 'number': case 'integer': {
      input = h('input', {
        id, name, type: 'number', step: k === 'integer' ? '1' : 'any', required,
        min: p.minimum, max: p.maximum, value: has ? String(p.default) : undefined,
      });
      read = () => {
        if (input.value === '') {
          if (required) throw `${name} is required`;
          return { omit: true };
        }
        const v = Number(input.value);
        if (Number.isNaN(v) || (k === 'integer' && !Number.isInteger(v))) throw `${name}: ${input.value} is not ${k === 'integer' ? 'an integer' : 'a number'}`;
        return { value: v };
      };
      break;
    }
    case 'string': {
      const long = (p.maxLength ?? 0) > 200 || /\n/.test(p.default ?? '');
      input = long
        ? h('textarea', { id, name, rows: 3, required }, has ? String(p.default) : '')
        : h('input', { id, name, type: 'text', required, value: has ? String(p.default) : undefined, placeholder: p.format || p.pattern });
      read = () => (input.value === '' && !required ? { omit: true } : { value: input.value });
      break;
    }
    default: {
      const t = Array.isArray(p.type) ? p.type[0] : p.type;
      input = h('textarea', {
        id, name, rows: 3, class: 'json', required, spellcheck: 'false',
        placeholder: t === 'array' ? '[ … ]' : t === 'object' ? '{ … }' : 'JSON',
      }, has ? JSON.stringify(p.default, null, 2) : '');
      read = () => {
        if (input.value.trim() === '') {
          if (required) throw `${name} is required`;
          return { omit: true };
        }
        try { return { value: JSON.parse(input.value) }; } catch (e) { throw `${name}: not JSON: ${e.message}`; }
      };
    }
  }
  const label = h('label', { for: id, class: 'arg' },
    h('span', { class: 'name' }, name), required ? h('span', { class: 'req', title: 'required' }, '*') : null,
    h('span', { class: 'type' }, typeLabel(p, k)));
  const desc = p.description || p.title;
  const row = h('div', { class: 'field ' + k, dataset: { arg: name } }, label, input, desc ? h('div', { class: 'desc' }, desc) : null);
  return { row, read };
}

// toolForm returns the form of tool and collect, which reads its
// arguments or throws a message.
export function toolForm(tool, onSubmit) {
  const schema = tool.inputSchema || {};
  const props = schema.properties || {};
  const required = new Set(schema.required || []);
  const fields = Object.entries(props).map(([name, p]) => ({ name, ...field(name, p || {}, required.has(name)) }));
  let raw = null;
  if (fields.length === 0) {
    // No properties the form can show: the arguments as one JSON object.
    raw = h('textarea', { id: 'arg-json', name: '__json', rows: 3, class: 'json', spellcheck: 'false' }, '{}');
  }
  const collect = () => {
    if (raw) {
      const v = raw.value.trim() === '' ? {} : JSON.parse(raw.value);
      if (typeof v !== 'object' || v === null || Array.isArray(v)) throw 'the arguments are a JSON object';
      return v;
    }
    const args = {};
    for (const f of fields) {
      const r = f.read();
      if (!r.omit) args[f.name] = r.value;
    }
    return args;
  };
  const button = h('button', { type: 'submit', class: 'primary' }, 'Call ' + tool.name);
  const form = h('form', { id: 'call-form', dataset: { tool: tool.name }, novalidate: true },
    fields.map((f) => f.row),
    raw ? h('div', { class: 'field json' }, h('label', { for: 'arg-json', class: 'arg' }, h('span', { class: 'name' }, 'arguments'), h('span', { class: 'type' }, 'JSON object')), raw) : null,
    h('div', { class: 'submit' }, button, h('span', { class: 'hint', id: 'call-state' })));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    onSubmit(collect, button);
  });
  return form;
}
