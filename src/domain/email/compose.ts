import { LINK_TOKEN_PARAM } from '../links/secret-params.js';
import type { EmailMessage } from './ports.js';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

export interface EmailContent {
  to: string;
  subject: string;
  /** Paragraphs of plain text, before and after the action. */
  intro: readonly string[];
  /** The one link the email is about: its button text and absolute URL. */
  action?: { label: string; url: string };
  outro?: readonly string[];
}

/**
 * A plain-text and an HTML body with the same content. Every value is escaped in the HTML; the link
 * is written out in full in both (mail clients that block buttons still show it).
 */
export function composeEmail(content: EmailContent): EmailMessage {
  const outro = content.outro ?? [];
  const text = [...content.intro, ...(content.action ? [`${content.action.label}: ${content.action.url}`] : []), ...outro].join('\n\n');
  const p = (t: string) => `<p style="margin:0 0 16px">${escape(t)}</p>`;
  const action = content.action
    ? `<p style="margin:0 0 16px"><a href="${escape(content.action.url)}" style="display:inline-block;padding:10px 16px;background:#1d4ed8;color:#ffffff;text-decoration:none;border-radius:6px">${escape(content.action.label)}</a></p>` +
      `<p style="margin:0 0 16px;font-size:13px;color:#555555">Or open this link: <a href="${escape(content.action.url)}">${escape(content.action.url)}</a></p>`
    : '';
  const html =
    `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(content.subject)}</title></head>` +
    `<body style="font-family:system-ui,sans-serif;font-size:15px;line-height:1.5;color:#111111;margin:0;padding:24px">` +
    content.intro.map(p).join('') +
    action +
    outro.map(p).join('') +
    `</body></html>`;
  return { to: content.to, subject: content.subject, text, html };
}

/** An absolute link: `path` on the gateway's public base URL. */
export function absoluteLink(baseUrl: string, path: string): string {
  return new URL(path, `${baseUrl.replace(/\/+$/, '')}/`).toString();
}

/** An absolute link that carries a link token, in the one parameter logs redact. */
export function tokenLink(baseUrl: string, path: string, token: string): string {
  const url = new URL(absoluteLink(baseUrl, path));
  url.searchParams.set(LINK_TOKEN_PARAM, token);
  return url.toString();
}
