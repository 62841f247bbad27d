// Preloaded (`node --import ./bearer.mjs …`) into a client that has no option for headers (the MCP
// conformance suite's CLI): every request it sends to $FLOW_TEST_ORIGIN carries
// `Authorization: Bearer $FLOW_TEST_TOKEN`. Node's fetch and undici's own requests both go through
// undici's global dispatcher, which this replaces with one that adds the header.
import { Agent, setGlobalDispatcher } from "undici";

const token = process.env.FLOW_TEST_TOKEN;
const origin = process.env.FLOW_TEST_ORIGIN;

function withBearer(headers) {
  const bearer = `Bearer ${token}`;
  if (Array.isArray(headers)) return [...headers, "authorization", bearer];
  if (headers && typeof headers[Symbol.iterator] === "function") return [...[...headers].flat(), "authorization", bearer];
  return { ...(headers ?? {}), authorization: bearer };
}

if (token && origin) {
  setGlobalDispatcher(new Agent().compose((dispatch) => (options, handler) =>
    dispatch(String(options.origin) === origin ? { ...options, headers: withBearer(options.headers) } : options, handler)));
}
