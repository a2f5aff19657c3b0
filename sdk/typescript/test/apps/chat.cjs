// The same app in CommonJS, as its users write it: require tracerelay and init() at the top.
const { init } = require("tracerelay");
init({
  serviceName: process.env.APP_SERVICE ?? "shop",
  environment: "staging",
  samplingRate: Number(process.env.APP_SAMPLING ?? 1),
  debug: process.env.APP_DEBUG === "1",
  shutdownTimeout: process.env.APP_SHUTDOWN_TIMEOUT ? Number(process.env.APP_SHUTDOWN_TIMEOUT) : undefined,
});
const OpenAI = require("openai");
const Anthropic = require("@anthropic-ai/sdk");

async function main() {
  const client = new OpenAI({ maxRetries: 0 });
  const reply = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }] });
  console.log(reply.choices[0].message.content);
  const stream = await client.chat.completions.create({ model: "gpt-4o-mini", messages: [{ role: "user", content: "hi" }], stream: true });
  let text = "";
  let chunks = 0;
  for await (const chunk of stream) {
    chunks++;
    text += chunk.choices[0]?.delta?.content ?? "";
  }
  console.log(`${text} (${chunks} chunks)`);
  const claude = new Anthropic({ maxRetries: 0 });
  const message = await claude.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: [{ role: "user", content: "hi" }] });
  console.log(message.content[0].text);
  const events = await claude.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: [{ role: "user", content: "hi" }], stream: true });
  let said = "";
  for await (const event of events) if (event.type === "content_block_delta") said += event.delta.text;
  console.log(said);
}

main();
