/**
 * `epx-bsp` (packages/epx-bsp/, and `epx-gateway/bsp` in this repository): the reference BSP client. The two calls with a client certificate
 * and a Bearer token on one keep-alive pool (`createBspClient`), pulling by the book
 * (`pullRound`, `watch`), sending a programme after the server's own checks
 * (`pushProgramme`, `checkProgramme`), receiving the service's webhooks (`webhookReceiver`,
 * `createWebhookHandler`, or the signature check alone: `verifyWebhook`). docs/bsp-guide.md shows it in use.
 * @module
 */
export {
  createBspClient, type BspClient, type BspClientOptions,
  type BesoinsAnswer, type ProgrammeAnswer, type StatusAnswer, type RealiseAnswer, type SitesAnswer, type EventsAnswer, type BspEvent, type Retry, type Refused, type Unreachable,
  type BesoinsAgreges, type BesoinsSite, type JalonBesoin, type PuissanceDisponible,
  type Receipt, type ReceiptEntry, type ProgrammeStatus, type ProgrammeStatusEntry, type RealiseBody, type Creneau, type Totaux, type Verdict, type SitesBody, type SiteEntry,
} from './client.ts'
export { checkBesoinsAgreges, checkProgramme, DEFAULT_MAX_CLOCK_SKEW_SECONDS, type Checked, type CheckProgrammeOptions } from './check.ts'
export { pullRound, documentFile, STATE_FILE, type PullOptions, type RoundReport, type Outcome, type PairState } from './pull.ts'
export { watch, DEFAULT_INTERVAL_SECS, type WatchOptions } from './watch.ts'
export { pushProgramme, type PushOptions, type PushResult } from './push.ts'
export { backoffMs, firstAttemptAt, realTiming, type Timing } from './timing.ts'
export { verifyWebhook, DEFAULT_TOLERANCE_SECONDS, type VerifyWebhookOptions, type WebhookVerdict } from '../contract/webhook-signature.ts'
export { webhookReceiver, createWebhookHandler, seenIds, type WebhookReceiverOptions, type WebhookRequest, type WebhookAnswer, type SeenIds } from './receiver.ts'
