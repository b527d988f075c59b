/**
 * The description's `webhooks` (OpenAPI 3.1): what the service sends to an endpoint a
 * company registered (DECISIONS.md "Events for BSPs"): the check at registration, then one
 * POST per event, Standard Webhooks 1.0 (src/contract/webhook-signature.ts). Each event
 * type is a component schema the feed's page refers to as well, so both say the same.
 * The example delivery is the feed's recorded event, signed under a secret the description
 * gives, so a receiver can be tried against it.
 * @module
 */
import { eventJsonSchemas, eventsFeedJsonSchema, type JsonSchema } from '../../src/contract/published-schemas.ts'
import { webhookHeaders } from '../../src/contract/webhook-signature.ts'
import type { Recorded } from './record.ts'
import { EXAMPLE_WEBHOOK_SECRET, WEBHOOK_CHECK_DESCRIPTION, WEBHOOK_DESCRIPTION } from './texts.ts'

type EventType = keyof ReturnType<typeof eventJsonSchemas>

/** `besoins_agreges.publie` → `BesoinsAgregesPublie`, its component's name. */
const componentOf = (type: string): string => type.split(/[._]/).map(w => w[0]!.toUpperCase() + w.slice(1)).join('')

export function describeWebhooks (recordedFeed: readonly Recorded[]) {
  const types = eventJsonSchemas()
  const examples = new Map((recordedFeed.filter(r => r.status === 200).flatMap(r => (r.body as { evenements: Array<{ id: string; type: EventType }> }).evenements)).map(e => [e.type, e]))
  const feed = eventsFeedJsonSchema() as { properties: { evenements: object } }
  const schemas: Record<string, JsonSchema> = {
    ...Object.fromEntries(Object.entries(types).map(([type, schema]) => [componentOf(type), schema])),
    // The feed's page, its events by reference.
    Evenements: {
      ...feed,
      properties: { ...feed.properties, evenements: { ...feed.properties.evenements, items: { oneOf: Object.keys(types).map(type => ({ $ref: `#/components/schemas/${componentOf(type)}` })) } } },
    },
  }
  const common = { tags: ['webhooks'], security: [], 'x-epx-extension': true }
  const webhooks: Record<string, unknown> = {
    registrationCheck: {
      get: {
        operationId: 'checkWebhookEndpoint',
        summary: 'The service checks an endpoint when it is registered (extension of the contract)',
        description: WEBHOOK_CHECK_DESCRIPTION,
        ...common,
        parameters: [{ name: 'echo', in: 'query', required: true, description: 'A random value, new at each check.', schema: { type: 'string', minLength: 1 }, example: 'k7Qz-9cVb2' }],
        responses: {
          200: { description: 'Your endpoint answers the value, and nothing else, as its body: the endpoint is registered.', content: { 'text/plain': { schema: { type: 'string' }, example: 'k7Qz-9cVb2' } } },
          '4XX': { description: 'Any other answer, or none: the endpoint is not registered.' },
        },
      },
    },
  }
  for (const type of Object.keys(types) as EventType[]) {
    const example = examples.get(type)
    const body = example && JSON.stringify(example)
    const signed = example && webhookHeaders([EXAMPLE_WEBHOOK_SECRET], example.id, Math.floor(Date.parse((example as unknown as { occurred_at: string }).occurred_at) / 1000) + 1, body!)
    const header = (name: keyof NonNullable<typeof signed>, description: string, schema: object) =>
      ({ name, in: 'header', required: true, description, schema, ...(signed ? { example: signed[name] } : {}) })
    webhooks[type] = {
      post: {
        operationId: `deliver${componentOf(type)}`,
        summary: `An event \`${type}\` sent to your endpoint (extension of the contract)`,
        description: WEBHOOK_DESCRIPTION,
        ...common,
        parameters: [
          header('webhook-id', 'The event\'s `id`: the same event sent again has the same one (deduplicate by it), and it is a cursor of the feed (`apres`).', { type: 'string', pattern: '^[0-9]{15}$' }),
          header('webhook-timestamp', 'When this attempt was sent, Unix seconds: refuse one too far from your clock (5 minutes).', { type: 'string', pattern: '^[0-9]+$' }),
          header('webhook-signature', '`v1,` followed by the base64 HMAC-SHA256 of `webhook-id.webhook-timestamp.body` (the body\'s bytes as received) under the key the endpoint\'s secret `whsec_<base64>` encodes; several, separated by spaces, while a secret rotates: one matching is enough.' +
            (signed ? ` The example is signed under \`${EXAMPLE_WEBHOOK_SECRET}\`.` : ''), { type: 'string', pattern: '^v1,[A-Za-z0-9+/]+={0,2}( v1,[A-Za-z0-9+/]+={0,2})*$' }),
        ],
        requestBody: {
          required: true,
          description: 'The event, exactly as the feed (GET evenements) lists it.',
          content: { 'application/json': { schema: { $ref: `#/components/schemas/${componentOf(type)}` }, ...(example ? { examples: { recorded: { summary: 'An event of the feed\'s recorded answer', value: example } } } : {}) } },
        },
        responses: {
          '2XX': { description: 'Delivered: the service goes on with the endpoint\'s next event. Answer quickly; do the work after.' },
          401: { description: 'Refused: the signature or the timestamp did not verify. The service sends the event again, as after any answer other than 2xx.' },
          default: { description: 'Any other answer, or none: sent again with an exponential backoff (5 s up to 1 h between attempts) for 24 h, then the endpoint is marked failing. The feed keeps every event.' },
        },
      },
    }
  }
  return { webhooks, schemas, tag: { name: 'webhooks', description: 'What the service sends to the endpoints your company registered: the check at registration, then each event (extension of the contract)' } }
}
