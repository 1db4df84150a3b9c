#!/usr/bin/env node
'use strict'
// Generate the op declarations (ops.d.ts) and the ES module entry
// (index.mjs) from the add-on's schemas: run by scripts/build.js after
// each build, and with --check by the test suite, which fails when the
// committed files are stale. The native classes' declarations
// (native.d.ts) come from napi-rs's build.
const fs = require('node:fs')
const path = require('node:path')

const root = path.join(__dirname, '..')
const native = require(path.join(root, 'lib', 'native'))
const { camel } = require(path.join(root, 'lib', 'ops'))

const RESERVED = new Set(['default', 'in', 'function', 'class', 'var', 'new', 'delete', 'with', 'for',
  'if', 'else', 'return', 'switch', 'case', 'this', 'import', 'export', 'const', 'let', 'void', 'enum'])

function param (name) { return RESERVED.has(name) ? name + '_' : name }

/** A schema type as a TypeScript type. */
function tsType (t) {
  if (t.endsWith('?')) return `${tsType(t.slice(0, -1))} | null`
  const list = /^(.*)\[\d*\]$/.exec(t)
  if (list) {
    const e = list[1]
    if (e === 'int' || e === 'SymInt') return 'number[] | number'
    if (e === 'Tensor?') return '(Tensor | null)[]'
    return `${tsType(e)}[]`
  }
  switch (t) {
    case 'Tensor': return 'Tensor'
    case 'Scalar': return 'number | boolean | bigint'
    case 'int': case 'SymInt': return 'number | bigint'
    case 'float': return 'number'
    case 'bool': return 'boolean'
    case 'str': return 'string'
    case 'ScalarType': return 'DType'
    case 'Generator': return 'never'
    default: return 'string' // Device, Layout, MemoryFormat
  }
}

function tsReturn (returns, names) {
  if (returns.length === 0) return 'void'
  const one = (t) => t === 'Tensor' ? 'Tensor' : t === 'Tensor[]' ? 'Tensor[]' : tsType(t).replace(' | bigint', '')
  if (returns.length === 1) return one(returns[0])
  const tuple = `[${returns.map(one).join(', ')}]`
  if (names.length === returns.length) return `${tuple} & { ${names.map((n, i) => `${n}: ${one(returns[i])}`).join('; ')} }`
  return tuple
}

function optionsType (args, creation) {
  const fields = args.map((a) => `${a.name}?: ${tsType(a.type)}`)
  if (creation) fields.push('requiresGrad?: boolean')
  return fields.length ? `options?: { ${fields.join('; ')} }` : null
}

/** The declarations of one overload, as a function (or a method). */
function signatures (op, ov, asMethod) {
  let args = ov.args
  if (asMethod) {
    if (!args.length || args[0].name !== 'self') return []
    args = args.slice(1)
  }
  const positional = args.filter((a) => !a.kwargOnly)
  const required = positional.filter((a) => !a.hasDefault)
  const optional = positional.filter((a) => a.hasDefault)
  const kwOnly = args.filter((a) => a.kwargOnly)
  const ret = tsReturn(ov.returns, op.returnNames)
  const req = required.map((a) => `${param(a.name)}: ${tsType(a.type)}`)
  const out = []
  // all positional, then the keyword-only ones by name
  const full = req.concat(optional.map((a) => `${param(a.name)}?: ${tsType(a.type)}`))
  const o1 = optionsType(kwOnly, op.creation)
  out.push(`(${full.concat(o1 ? [o1] : []).join(', ')}): ${ret}`)
  // the required ones, then every optional one by name
  if (optional.length) {
    const o2 = optionsType(optional.concat(kwOnly), op.creation)
    out.push(`(${req.concat([o2]).join(', ')}): ${ret}`)
  }
  // everything after `self` by name (`ft.sum(t, {dim: [1], keepdim: true})`)
  const named = required.filter((a) => a.name !== 'self')
  if (named.length) {
    const fields = named.map((a) => `${a.name}: ${tsType(a.type)}`)
      .concat(optional.concat(kwOnly).map((a) => `${a.name}?: ${tsType(a.type)}`))
    if (op.creation) fields.push('requiresGrad?: boolean')
    const self = required.filter((a) => a.name === 'self').map((a) => `${param(a.name)}: ${tsType(a.type)}`)
    out.push(`(${self.concat([`options: { ${fields.join('; ')} }`]).join(', ')}): ${ret}`)
  }
  if (op.creation && required.length === 1 && /int\[|SymInt\[/.test(required[0].type)) {
    out.push(`(${req[0]}, requiresGrad: boolean): ${ret}`)
  }
  if (op.varargSizes != null && required.length >= 1) {
    const before = req.slice(0, -1)
    out.push(`(${before.concat(['...size: number[]']).join(', ')}): ${ret}`)
  }
  return out
}

function doc (op) {
  return `  /** torch's \`${op.name}\`:\n${op.schemas.map((s) => `   * - \`${s}\``).join('\n')}\n   */\n`
}

function generate () {
  const ops = native._bindingOps()
  let fns = ''
  let methods = ''
  const names = new Set()
  for (const op of ops) {
    const forms = [...new Set(op.overloads.flatMap((ov) => signatures(op, ov, false)))]
    const mforms = op.isMethod ? [...new Set(op.overloads.flatMap((ov) => signatures(op, ov, true)))] : []
    const aliases = [...new Set([op.name, camel(op.name)])]
    aliases.forEach((n) => names.add(n))
    // the function is declared once under torch's name; the camelCase
    // name is an export alias of it (`var` only as an alias: a reserved word)
    const decl = RESERVED.has(op.name) ? `${op.name}_` : op.name
    fns += doc(op).replace(/^ {2}/gm, '') +
      forms.map((f) => `${RESERVED.has(op.name) ? '' : 'export '}declare function ${decl}${f}\n`).join('')
    for (const n of aliases) if (n !== decl) fns += `export { ${decl} as ${n} }\n`
    for (const n of aliases) if (mforms.length) methods += doc(op) + mforms.map((f) => `  ${n}${f}\n`).join('')
  }
  const dts = `// Generated by scripts/gen-types.js from the dispatcher's schemas: do not edit.
import { Tensor } from './tensor'

/** A dtype by name (\`'float32'\`, \`'int64'\`, ...), as torch's \`torch.float32\`. */
export type DType = 'bool' | 'uint8' | 'int8' | 'int16' | 'int32' | 'int64' | 'float16' | 'bfloat16' |
  'float32' | 'float64' | 'float' | 'double' | 'half' | 'long' | 'int' | 'short' |
  'complex32' | 'complex64' | 'complex128' | 'chalf' | 'cfloat' | 'cdouble'

declare module './tensor' {
  interface Tensor {
${methods}  }
}

${fns}`
  const cjsNames = ['Tensor', 'ScriptModule', 'version', 'tensor', 'fromTypedArray', 'noGrad', 'enableGrad',
    'isGradEnabled', 'autograd', 'jit', 'ops', 'float32', 'float', 'float64', 'double', 'float16', 'half',
    'bfloat16', 'int64', 'long', 'int32', 'int', 'int16', 'int8', 'uint8', 'bool', 'complex32', 'chalf',
    'complex64', 'cfloat', 'complex128', 'cdouble']
  const all = [...new Set(cjsNames.concat([...names]))].filter((n) => /^[A-Za-z_$][\w$]*$/.test(n) && !RESERVED.has(n))
  const mjs = `// Generated by scripts/gen-types.js: the ES module entry, every export of index.js by name.
import ft from './index.js'

export default ft
export const {
${all.map((n) => `  ${n}`).join(',\n')}
} = ft
`
  return { 'ops.d.ts': dts, 'index.mjs': mjs }
}

const files = generate()
const check = process.argv.includes('--check')
let stale = []
for (const [name, text] of Object.entries(files)) {
  const file = path.join(root, name)
  if (check) {
    if (!fs.existsSync(file) || fs.readFileSync(file, 'utf8') !== text) stale.push(name)
  } else {
    fs.writeFileSync(file, text)
  }
}
// native.d.ts comes from napi-rs's build (scripts/build.js); without a
// build here, check at least that it declares every export of the add-on
if (check) {
  const declared = fs.readFileSync(path.join(root, 'native.d.ts'), 'utf8')
  const missing = Object.keys(native).filter((n) => !new RegExp(`(function|class) ${n.replace('$', '\\$')}\\b`).test(declared))
  if (missing.length) stale.push(`native.d.ts (lacks ${missing.join(', ')}; run \`npm run build\`)`)
}
if (stale.length) {
  console.error(`stale generated files: ${stale.join(', ')}; run \`node scripts/gen-types.js\``)
  process.exit(1)
}
