// CommonJS with the packages loaded the other way round: openai first, then tracerelay's two lines.
const OpenAI = require("openai");
const { init } = require("tracerelay");
init({ serviceName: "shop", environment: "staging" });

const client = new OpenAI({ maxRetries: 0 });
client.embeddings.create({ model: "text-embedding-3-small", input: "hi" }).then((reply) => console.log(reply.data.length));
