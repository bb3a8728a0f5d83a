// Owner mail: every mail is written to the workspace's outbox (`mails`), and also sent over
// SMTP when SMTP_URL is set. SMTP runs after the row is stored and its failure is logged,
// never thrown: the outbox row is the record.
import nodemailer, { type Transporter } from 'nodemailer'
import type { Logger } from 'pino'
import type { Clock } from '../clock.js'
import type { EventRepo, Mail } from '../store/events.js'

export const MAIL_FROM = 'Meterflow <no-reply@meterflow.invalid>'

export class Mailer {
  private readonly transport: Transporter | null

  constructor(
    private readonly repo: EventRepo,
    private readonly clock: Clock,
    private readonly log: Logger,
    smtpUrl?: string,
  ) {
    this.transport = smtpUrl ? nodemailer.createTransport(smtpUrl) : null
  }

  async send(workspaceId: number, to: string[], subject: string, body: string): Promise<Mail[]> {
    const now = this.clock.now()
    const mails = await this.repo.addMails(
      to.map((addr) => ({ workspace_id: workspaceId, to: addr, subject, body, created_at: now })),
    )
    if (this.transport)
      for (const m of mails)
        this.transport
          .sendMail({ from: MAIL_FROM, to: m.to, subject: m.subject, text: m.body })
          .catch((err: unknown) => this.log.warn({ err, to: m.to }, 'smtp send failed'))
    return mails
  }

  close(): void {
    this.transport?.close()
  }
}
