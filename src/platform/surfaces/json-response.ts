/** A JSON answer for people to read (the router's own views: /v1/models, /health, /routing). */
export const json = (body: unknown, status = 200): Response =>
  new Response(JSON.stringify(body, null, 2), { status, headers: { "content-type": "application/json" } });
