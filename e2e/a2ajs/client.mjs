import { randomUUID } from "node:crypto";

// What the interoperability scripts share: a client factory of one version
// of the official A2A JavaScript SDK that prefers the transport asked for
// and sends the agent's API key, read from A2A_API_KEY (the key travels in
// the environment, never on the command line), with every request.
export const clientFactory = (sdk, transport) => {
  const key = process.env.A2A_API_KEY;
  const fetchImpl = (input, init = {}) => {
    const headers = new Headers(init.headers || {});
    headers.set("X-API-Key", key);
    return fetch(input, { ...init, headers });
  };
  return new sdk.ClientFactory(
    sdk.ClientFactoryOptions.createFrom(sdk.ClientFactoryOptions.default, {
      transports: [new sdk.JsonRpcTransportFactory({ fetchImpl }), new sdk.RestTransportFactory({ fetchImpl })],
      preferredTransports: [transport],
    }),
  );
};

// unknownTaskError is the name of the error the client raises when asked
// for a task that does not exist, or "found" when it finds one.
export const unknownTaskError = async (client) => {
  try {
    await client.getTask({ id: randomUUID() });
    return "found";
  } catch (e) {
    return e.constructor.name;
  }
};
