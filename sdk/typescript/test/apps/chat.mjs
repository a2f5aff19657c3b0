// An ESM app as its users write it: the real `openai` package, plus tracerelay's two lines. The
// OpenAI client reads OPENAI_BASE_URL / OPENAI_API_KEY and tracerelay TRACERELAY_API_KEY /
// TRACERELAY_BASE_URL from the environment. The openai import comes first on purpose: ESM hoists
// imports, so the package is loaded before init() runs either way.
import OpenAI from "openai";
import { init } from "tracerelay";
init({
  serviceName: process.env.APP_SERVICE ?? "shop",
  environment: "staging",
  samplingRate: Number(process.env.APP_SAMPLING ?? 1),
  debug: process.env.APP_DEBUG === "1",
  shutdownTimeout: process.env.APP_SHUTDOWN_TIMEOUT ? Number(process.env.APP_SHUTDOWN_TIMEOUT) : undefined,
});

const client = new OpenAI({ maxRetries: 0 });
const reply = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
console.log(reply.choices[0].message.content);
const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], stream: true });
let text = "";
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  text += chunk.choices[0]?.delta?.content ?? "";
  if (chunk.usage) console.log("usage chunk!");
}
console.log(`${text} (${chunks} chunks)`);
