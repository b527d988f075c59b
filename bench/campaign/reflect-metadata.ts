/**
 * The Reflect metadata API that @peculiar/x509's dependency injection (tsyringe) demands
 * before it loads. The `reflect-metadata` package is not installed; these four functions
 * are all tsyringe and TypeScript's emitted decorators call. Import before @peculiar/x509.
 * @module
 */
type Key = unknown
const store = new WeakMap<object, Map<PropertyKey | undefined, Map<Key, unknown>>>()

function table (target: object, prop: PropertyKey | undefined, create: boolean): Map<Key, unknown> | undefined {
  let byProp = store.get(target)
  if (!byProp && create) store.set(target, byProp = new Map())
  let t = byProp?.get(prop)
  if (!t && create) byProp!.set(prop, t = new Map())
  return t
}

const R = Reflect as unknown as Record<string, unknown>
if (typeof R.getMetadata !== 'function') {
  const defineMetadata = (key: Key, value: unknown, target: object, prop?: PropertyKey) => { table(target, prop, true)!.set(key, value) }
  const getOwnMetadata = (key: Key, target: object, prop?: PropertyKey) => table(target, prop, false)?.get(key)
  const getMetadata = (key: Key, target: object, prop?: PropertyKey): unknown => {
    for (let t: object | null = target; t; t = Object.getPrototypeOf(t)) {
      const m = table(t, prop, false)
      if (m?.has(key)) return m.get(key)
    }
    return undefined
  }
  const metadata = (key: Key, value: unknown) => (target: object, prop?: PropertyKey) => defineMetadata(key, value, target, prop)
  Object.assign(R, { defineMetadata, getOwnMetadata, getMetadata, metadata })
}
