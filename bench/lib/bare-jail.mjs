// The system part of the "bare bwrap" baselines the benches compare comis's jail against: the
// host's /usr read-only with the usual merged-/usr links, a fresh /proc and /dev. Each bench adds
// its own namespace flags, binds and command.
export const BARE_SYSTEM_TREE = ['--ro-bind', '/usr', '/usr', '--symlink', 'usr/lib', '/lib', '--symlink', 'usr/lib64', '/lib64', '--symlink', 'usr/bin', '/bin', '--proc', '/proc', '--dev', '/dev'];
