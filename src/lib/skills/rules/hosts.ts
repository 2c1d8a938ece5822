/**
 * Host classes as data: the lure and exfiltration rules are written over the shape
 * of a behaviour (download + run, copy + paste into a terminal, send to a collector)
 * and take the hosts from these lists, so a new paste site or file host is one line
 * here, not a new rule. Entries are lower-case host names (a leading `*.` is implied:
 * `pastebin.com` also covers `www.pastebin.com`), or host + path prefix.
 *
 * None of these lists come from one sample or one campaign: they are the public
 * categories of anonymous hosting that payload-delivery reports keep naming.
 */

/** Code-sharing and paste sites: anonymous, mutable text that a lure tells the user to copy into a terminal. */
export const PASTE_HOSTS = [
  'pastebin.com',
  'pastebin.pl',
  'paste.ee',
  'hastebin.com',
  'hastebin.skyra.pw',
  'ghostbin.co',
  'ghostbin.com',
  'rentry.co',
  'rentry.org',
  '0bin.net',
  'dpaste.com',
  'dpaste.org',
  'dpaste.de',
  'termbin.com',
  'paste.rs',
  'controlc.com',
  'justpaste.it',
  'pastes.io',
  'privatebin.net',
  'ix.io',
  'sprunge.us',
  'bpa.st',
  'katb.in',
  'telegra.ph',
  'glot.io',
  'pastie.org',
  'codeshare.io',
  'paste.debian.net',
  'paste.ubuntu.com',
  'jsfiddle.net',
  'codepen.io',
  'jsbin.com',
  'ideone.com',
  'onecompiler.com',
  'paste.mozilla.org',
  'pastebin.mozilla.org',
  'hatebin.com',
  'gist.github.com',
  'gist.githubusercontent.com',
  'snippet.host',
  'paste.gg',
  'paste.centos.org',
  'notes.io',
  'write.as',
] as const;

/** Anonymous file hosts, temporary upload services and chat CDNs: where lure payloads (archives, executables) are parked. */
export const FILE_HOSTS = [
  'mega.nz',
  'mega.io',
  'mediafire.com',
  'transfer.sh',
  'anonfiles.com',
  'gofile.io',
  'catbox.moe',
  'pixeldrain.com',
  'file.io',
  '0x0.st',
  'tmpfiles.org',
  'temp.sh',
  'bashupload.com',
  'sendspace.com',
  'wetransfer.com',
  'we.tl',
  '4shared.com',
  'filebin.net',
  'qu.ax',
  'uguu.se',
  'cdn.discordapp.com',
  'media.discordapp.net',
  'files.catbox.moe',
  'litter.catbox.moe',
  'krakenfiles.com',
  'workupload.com',
  'dosya.co',
  'anonymfile.com',
  'filetransfer.io',
  'send.vis.ee',
  'oshi.at',
  'tempfile.org',
  'dropmefiles.com',
  'ufile.io',
] as const;

/** URL shorteners and tunnels: hide where a download really comes from. */
export const REDIRECT_HOSTS = [
  'bit.ly',
  'tinyurl.com',
  'is.gd',
  'cutt.ly',
  'rb.gy',
  'shorturl.at',
  'tiny.cc',
  'goo.gl',
  'ow.ly',
  'rebrand.ly',
  's.id',
  't.ly',
  'v.gd',
  'bl.ink',
  'ngrok.io',
  'ngrok-free.app',
  'ngrok.app',
  'trycloudflare.com',
  'loca.lt',
  'serveo.net',
  'localhost.run',
  'pinggy.link',
] as const;

/** Anonymous request collectors (webhook testers, out-of-band interaction servers): data sent there is gone. */
export const COLLECTOR_HOSTS = [
  'webhook.site',
  'requestbin.com',
  'requestbin.net',
  'pipedream.net',
  'hookbin.com',
  'beeceptor.com',
  'requestcatcher.com',
  'interact.sh',
  'oast.fun',
  'oast.pro',
  'oast.live',
  'oast.site',
  'oast.online',
  'oast.me',
  'burpcollaborator.net',
  'oastify.com',
  'canarytokens.com',
  'dnslog.cn',
  'ceye.io',
  'postb.in',
  'ptsv2.com',
  'ptsv3.com',
  'webhook.cool',
  'requestinspector.com',
  'mockbin.org',
  'hookdeck.com',
] as const;

/** Chat webhooks: legitimate for notifications, also a common exfiltration channel (reported at WARN). */
export const CHAT_WEBHOOKS = ['discord.com/api/webhooks', 'discordapp.com/api/webhooks', 'hooks.slack.com', 'api.telegram.org/bot', 'outlook.office.com/webhook'] as const;

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

/**
 * A regex source matching a host of `hosts` at the start of a URL's authority
 * (`https://`, `//` or bare), with optional sub-domains, bounded so it stays linear.
 */
export function hostAlternation(hosts: readonly string[]): string {
  return String.raw`(?:[a-z0-9-]{1,63}\.){0,4}(?:${hosts.map(escape).join('|')})(?![\w-])`;
}

/**
 * The same hosts for free text (no scheme before them): the match starts at the host name itself,
 * bounded by a lookbehind, so the regex does not try a sub-domain prefix at every word of the file.
 */
export function hostAnchor(hosts: readonly string[]): string {
  return String.raw`(?<![\w-])(?:${hosts.map(escape).join('|')})(?![\w-])`;
}

/** A raw public-looking IPv4 host (the checks filter private ranges). */
export const RAW_IP_HOST = String.raw`(?:\d{1,3}\.){3}\d{1,3}(?![\d.])`;

/** Any host of the untrusted download classes: paste, file host, redirect/tunnel, or a raw IP. */
export const UNTRUSTED_HOST = String.raw`(?:${hostAlternation([...PASTE_HOSTS, ...FILE_HOSTS, ...REDIRECT_HOSTS])}|${RAW_IP_HOST})`;

/** Lower-case literals for the rules' triggers: the registrable part of each host. */
export function hostTriggers(hosts: readonly string[]): string[] {
  return [...new Set(hosts.map((h) => h.split('/')[0]!))];
}
