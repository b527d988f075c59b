/**
 * Who is looking at a console page, and the two reply helpers every page uses.
 * The console's session layer sets `request.viewer`; pages read it and never look at
 * cookies themselves. Declared here so page modules and the server agree on one shape.
 * @module
 */
import type { SafeHtml } from './html.ts'

export interface Viewer {
  readonly username: string
  /** A service admin sees every company; a member sees only `companyId`'s. */
  readonly admin: boolean
  /** The member's company; null for an admin. */
  readonly companyId: string | null
  /** The per-session CSRF token every form must carry (hidden field `_csrf`). */
  readonly csrfToken: string
  /** Its password was generated (an account's creation, a reset): it must choose its own first. */
  readonly mustChangePassword?: true
}

/** What a page handler hands to the layout. */
export interface PageContent {
  /** French, shown in <title> and <h1>. */
  readonly title: string
  readonly body: SafeHtml
}

declare module 'fastify' {
  interface FastifyRequest {
    /** Set by the session layer before any authenticated route runs; null on public routes. */
    viewer: Viewer | null
  }
  interface FastifyReply {
    /** Renders `content` inside the console's layout (navigation, headers), status 200 unless set. */
    page (content: PageContent): FastifyReply
  }
}
