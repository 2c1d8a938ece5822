/** crypto_mining: miners, pools and the stratum protocol. Assembled into the one table by ../rules.ts. */
import type { Rule } from './types.js';

export const CRYPTO_RULES: readonly Rule[] = [
  {
    id: 'CRYPTO_STRATUM',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'CRITICAL',
    description: 'Mining pool protocol (`stratum://`)',
    help: 'A mining pool URL. Skills do not mine.',
    pattern: /\bstratum(?:\+(?:tcp|ssl|tls|udp))?:\/\//gi,
    triggers: ['stratum'],
    worstCase: 'stratum+tcp:/',
  },
  {
    id: 'CRYPTO_MINER_BINARY',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'CRITICAL',
    description: 'Known cryptocurrency miner binary',
    help: 'A cryptocurrency miner. Skills do not mine.',
    pattern:
      /\b(?:xmrig(?:-\w{1,20})?|xmr-stak(?:-\w{1,10})?|cpuminer(?:-\w{1,10})?|minerd|cgminer|bfgminer|ethminer|nbminer|phoenixminer|lolminer|nanominer|ccminer|sgminer|gminer|teamredminer|srbminer\w{0,10}|xmrminer|kdevtmpfsi|kinsing)\b/gi,
    triggers: ['xmr', 'miner', 'kdevtmpfsi', 'kinsing'],
    worstCase: 'xmrig-xmrig-',
  },
  {
    id: 'CRYPTO_POOL_DOMAIN',
    kind: 'pattern',
    category: 'crypto_mining',
    severity: 'WARN',
    description: 'Mining pool domain pattern',
    help: 'A cryptocurrency mining pool host. Skills do not mine.',
    pattern:
      /\b(?:nanopool|supportxmr|minexmr|f2pool|ethermine|2miners|hashvault|moneroocean|nicehash|minergate|slushpool|antpool|viabtc|c3pool|herominers|unmineable|miningpoolhub|xmrpool|prohashing|flypool|sparkpool|dwarfpool)\.[a-z]{2,10}\b|\b(?:xmr|monero|eth|btc|ltc|zec|rvn|erg|kas)-?pool\.[a-z]{2,10}\b/gi,
    triggers: ['pool', 'miner', 'nicehash', 'xmr', 'ethermine', 'hashvault', 'moneroocean', 'viabtc', 'unmineable'],
    worstCase: 'xmrpool xmr-pool.',
  },
];
