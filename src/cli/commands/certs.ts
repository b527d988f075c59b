/**
 * `epx cert issue COMPANY --out DIR`: the bundle a BSP needs, made with the
 * development PKI of `epx init`: client.crt and client.key (signed by the client CA,
 * subject = the company's bound subject) and ca.crt (the CA of the server certificate).
 * @module
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { issueCert, pkiPaths, readClientCa } from '../../auth/pki.ts'
import { inDataDir } from '../../config.ts'
import { EpxError } from '../../errors.ts'
import { openCompanies } from '../../store/companies.ts'
import { required } from '../args.ts'
import { defineCommand, type CommandSpec } from '../define-command.ts'
import type { Command } from '../io.ts'
import { readSettings, withStore } from '../settings.ts'
import { checkCompanyId } from './companies.ts'

const issueSpec: CommandSpec = {
  usage: 'epx cert issue COMPANY --out DIR',
  summary: 'write client.crt, client.key and ca.crt for a company',
  about: [
    'Writes a client certificate bundle for a company into DIR: client.crt and client.key',
    '(signed by the development client CA, subject = the subject bound to the company) and',
    'ca.crt (the CA that signed the server certificate, for curl --cacert). Files in DIR',
    'with those names are replaced. For production, issue certificates from your own CA',
    'and point api.tls.clientCaFile at it.',
  ].join('\n'),
  positionals: ['COMPANY'],
  options: { out: { type: 'string', arg: 'DIR', help: 'folder to write the bundle to (created if missing; required)' } },
}

export interface CertBundle { readonly dir: string; readonly cert: string; readonly key: string; readonly ca: string; readonly subject: string }

/** Issues the bundle for an existing company (also used by `epx demo`). */
export async function issueBundle (dataDir: string, companyId: string, outDir: string): Promise<CertBundle> {
  const company = await withStore(dataDir, store => openCompanies(store).get(companyId))
  if (!company) throw new EpxError('EPX_NOT_FOUND', [`no company '${companyId}'; add it first with 'epx company add ${companyId} --name NAME'`])
  const clientCa = readClientCa(dataDir)
  const p = pkiPaths(dataDir)
  if (!clientCa || !existsSync(p.caCert)) {
    throw new EpxError('EPX_NOT_FOUND', [`no development PKI in ${p.dir}; run 'epx init --data ${dataDir}'`])
  }
  const pair = issueCert(clientCa, { subject: company.certSubject })
  const dir = resolve(outDir)
  mkdirSync(dir, { recursive: true })
  const bundle = { dir, cert: join(dir, 'client.crt'), key: join(dir, 'client.key'), ca: join(dir, 'ca.crt'), subject: company.certSubject }
  writeFileSync(bundle.cert, pair.certPem)
  writeFileSync(bundle.key, pair.keyPem, { mode: 0o600 })
  copyFileSync(p.caCert, bundle.ca)
  return bundle
}

const issue = defineCommand(issueSpec, async (args, io) => {
  const companyId = checkCompanyId(args.positionals[0]!, issueSpec)
  const out = required(args, issueSpec, 'out')
  const settings = readSettings(io.dataDir)
  const bundle = await issueBundle(io.dataDir, companyId, out)
  io.out(`issued a client certificate for ${companyId} (subject ${bundle.subject})`)
  io.out(`  ${bundle.cert}`)
  io.out(`  ${bundle.key} (private key; keep it secret)`)
  io.out(`  ${bundle.ca} (server CA)`)
  // The API checks client certificates against the configured CA, which may not be ours.
  const configuredCa = inDataDir(io.dataDir, settings.config.api.tls.clientCaFile)
  if (configuredCa !== pkiPaths(io.dataDir).clientCaCert) {
    io.err(`epx: warning: api.tls.clientCaFile is ${configuredCa}, not the development client CA; this certificate will get 403 MTLS_REQUIRED`)
  }
})

export const certSubcommands: readonly Command[] = [issue]
