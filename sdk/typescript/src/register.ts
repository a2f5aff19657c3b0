// `node --import tracerelay/register app.mjs` (or `--require tracerelay/register`): tracing without
// touching the code, configured from the environment (TRACERELAY_API_KEY, TRACERELAY_BASE_URL,
// TRACERELAY_SERVICE_NAME, TRACERELAY_ENVIRONMENT, TRACERELAY_SAMPLING_RATE, TRACERELAY_BATCH, TRACERELAY_DEBUG).
import { init } from "./index.js";

const env = process.env;
if (!env.TRACERELAY_API_KEY) {
  console.error("tracerelay/register: TRACERELAY_API_KEY is not set; not tracing");
} else {
  try {
    init({
      serviceName: env.TRACERELAY_SERVICE_NAME,
      environment: env.TRACERELAY_ENVIRONMENT,
      samplingRate: env.TRACERELAY_SAMPLING_RATE ? Number(env.TRACERELAY_SAMPLING_RATE) : undefined,
      batch: env.TRACERELAY_BATCH === "1" || env.TRACERELAY_BATCH === "true",
      debug: env.TRACERELAY_DEBUG === "1" || env.TRACERELAY_DEBUG === "true",
    });
  } catch (error) {
    console.error(`tracerelay/register: not tracing (${(error as Error).message})`);
  }
}
