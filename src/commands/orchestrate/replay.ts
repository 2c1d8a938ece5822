import Replay from '../replay.js';

/** `comis orchestrate replay <runId>`: the seed's spelling of `comis replay`. */
export default class OrchestrateReplay extends Replay {
  static override summary = 'Same as `comis replay <runId>`: re-run a durable run offline against its recording.';
}
