import t from 'tap'
import { entityTags, isNotModified, parseHttpDate } from '../../src/http/conditional.ts'

const ETAG = 'W/"abc123_-XYZ"'
const LM = Date.parse('2026-11-21T07:00:00.250Z')          // emitted_at with milliseconds
const LM_HTTP = 'Sat, 21 Nov 2026 07:00:00 GMT'           // what Last-Modified says
const v = { etag: ETAG, lastModifiedMs: LM }
const nm = (ifNoneMatch?: string, ifModifiedSince?: string) => isNotModified({ ifNoneMatch, ifModifiedSince }, v)

t.test('If-None-Match', async t => {
  t.ok(nm(ETAG), 'the current ETag, echoed back, gives 304')
  t.notOk(nm('W/"other"'), 'another ETag gives 200')
  t.ok(nm('W/"x", W/"abc123_-XYZ" , "y"'), 'a list containing the current ETag gives 304')
  t.notOk(nm('W/"x", "y"'), 'a list without it gives 200')
  t.ok(nm('"abc123_-XYZ"'), 'weak comparison: the strong spelling of the same tag matches')
  t.ok(isNotModified({ ifNoneMatch: 'W/"abc"' }, { etag: '"abc"', lastModifiedMs: LM }), 'weak comparison: either side may be weak')
  t.ok(nm('*'), '`*` matches any current representation')
  t.ok(nm(' * '), '`*` with spaces')
  t.notOk(nm('abc123_-XYZ'), 'an unquoted tag is not an entity tag')
  t.notOk(nm(''), 'an empty field matches nothing')
  t.ok(nm('W/"x", , W/"abc123_-XYZ"'), 'empty list members are tolerated')
})

t.test('If-Modified-Since has one-second resolution', async t => {
  t.notOk(nm(undefined, 'Sat, 21 Nov 2026 06:59:59 GMT'), 'a date before Last-Modified gives 200')
  t.ok(nm(undefined, LM_HTTP), 'the Last-Modified date itself gives 304 (milliseconds are below resolution)')
  t.ok(nm(undefined, 'Sat, 21 Nov 2026 07:00:01 GMT'), 'a later date gives 304')
  t.ok(nm(undefined, 'Saturday, 21-Nov-26 07:00:00 GMT'), 'the obsolete RFC 850 form is understood')
  t.ok(nm(undefined, 'Sat Nov 21 07:00:00 2026'), 'the asctime form is understood')
})

t.test('an unparsable If-Modified-Since is ignored', async t => {
  for (const bad of ['yesterday', '2026-11-21T07:00:00Z', 'Sat, 31 Feb 2026 07:00:00 GMT', 'Sat, 21 Nov 2026 07:00:00 CET', '', 'Sat, 21 Nov 2026 25:00:00 GMT']) {
    t.notOk(nm(undefined, bad), `'${bad}' gives 200`)
  }
})

t.test('If-None-Match wins over If-Modified-Since when both are present', async t => {
  t.notOk(nm('W/"stale"', 'Sat, 21 Nov 2026 08:00:00 GMT'), 'ETag differs: 200 although the date says unchanged')
  t.ok(nm(ETAG, 'Sat, 21 Nov 2026 06:00:00 GMT'), 'ETag matches: 304 although the date says changed')
  t.notOk(nm('', LM_HTTP), 'even an empty If-None-Match takes precedence')
})

t.test('no conditional header means 200', async t => {
  t.notOk(nm())
})

t.test('entity tag lists and HTTP dates parse as RFC 9110 says', async t => {
  t.same(entityTags('"a", W/"b",W/"c,d"'), ['a', 'b', 'c,d'], 'a comma inside a tag is part of it')
  t.same(entityTags('"a", junk, "b"'), ['a'], 'parsing stops at a malformed member')
  t.equal(parseHttpDate('Sun, 06 Nov 1994 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37))
  t.equal(parseHttpDate('Sunday, 06-Nov-94 08:49:37 GMT'), Date.UTC(1994, 10, 6, 8, 49, 37))
  t.equal(parseHttpDate('Sun Nov  6 08:49:37 1994'), Date.UTC(1994, 10, 6, 8, 49, 37))
})
