// An agent as its users write it with tracerelay's runs: an `agent` span around a `tool` span, a chat call
// under each (two models of two providers), the root ending last. Environment as for chat.mjs.
import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";
import { init, trace } from "tracerelay";
init({ serviceName: "agent", environment: "staging" });

const openai = new OpenAI({ maxRetries: 0 });
const claude = new Anthropic({ maxRetries: 0 });
const hi = [{ role: "user", content: "hi" }];
const answer = await trace("triage", { kind: "agent", input: { question: "where is order 42?" } }, async () => {
  const status = await trace("lookup_order", { kind: "tool", input: { order: 42 } }, async () => {
    const check = await claude.messages.create({ model: "claude-3-5-haiku-latest", max_tokens: 16, messages: hi });
    return { status: "shipped", checked: check.content[0].text };
  });
  const reply = await openai.chat.completions.create({ model: "gpt-4o-mini", messages: hi });
  return `${reply.choices[0].message.content} (${status.status})`;
});
console.log(answer);
