// The process-wide state, on `globalThis` under a registered symbol: an application that loads both
// the ESM and the CommonJS build (an ESM app with a CommonJS dependency that requires tracerelay)
// still has one client, one span context and one fetch wrapper.
import type { AsyncLocalStorage } from "node:async_hooks";

export interface ClientLike {
  record(item: object): void;
}

export interface State {
  client: (ClientLike & Record<string, any>) | undefined;
  last: (ClientLike & Record<string, any>) | undefined; // the client stopped last, for stats()
  context: AsyncLocalStorage<any> | undefined;
  originalFetch: typeof fetch | undefined;
  exitHook: boolean;
}

const KEY = Symbol.for("tracerelay.state");
const holder = globalThis as unknown as Record<symbol, State | undefined>;
if (holder[KEY] === undefined) {
  holder[KEY] = { client: undefined, last: undefined, context: undefined, originalFetch: undefined, exitHook: false };
}

export const state: State = holder[KEY] as State;
