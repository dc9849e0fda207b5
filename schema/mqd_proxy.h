/*
 * mqd_proxy.h: what mqd-proxy adds to the MQD ABI that a debugger can see.
 *
 * libmqdproxy.so returns the vendor DLL's own result codes unchanged. When the proxy itself
 * fails (server unreachable, session lost, ...) it returns one of the codes below instead.
 * They live far above any range a real MQD DLL uses (DLLs count up from mqs_first_user_code =
 * 100), so they cannot be confused with the vendor's. mqs_dll_error_string() on the shim turns
 * them into a sentence that says what happened and where.
 *
 * docs/failure-codes.md is generated from the comments below and from the sentences in
 * common/ProxyErrors.cc (tools/docs/failure-codes.py; the test docs-failure-codes checks it).
 */
#ifndef MQD_PROXY_H
#define MQD_PROXY_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MQD_PROXY_ERR_FIRST = 0x4d510000, /* 'M','Q' << 16 */

  /* The shim could not connect to the server named by `MQD_PROXY_SERVER`. */
  MQD_PROXY_ERR_UNREACHABLE = MQD_PROXY_ERR_FIRST + 1,
  /* The server said no to a session: DLL not on its allow-list, DLL failed to load, protocol
   * version mismatch, `--max-sessions` reached (too many sessions on the server). */
  MQD_PROXY_ERR_SESSION_REFUSED = MQD_PROXY_ERR_FIRST + 2,
  /* The connection broke during this call (network, server gone), or an earlier call lost it;
   * the next call re-establishes the session. */
  MQD_PROXY_ERR_SESSION_LOST = MQD_PROXY_ERR_FIRST + 3,
  /* No sign of progress from the server for `MQD_PROXY_TIMEOUT`; the connection is then
   * abandoned, and the next call re-establishes the session. */
  MQD_PROXY_ERR_TIMEOUT = MQD_PROXY_ERR_FIRST + 4,
  /* The server's worker died during this call: the vendor DLL crashed (the text names the
   * signal, the DLL and the DLL entry point it was in, which may differ from the call the
   * debugger made when the server was walking ahead for it) or was killed; the next call
   * re-establishes the session. */
  MQD_PROXY_ERR_WORKER_DIED = MQD_PROXY_ERR_FIRST + 5,
  /* The vendor DLL does not export this optional entry point (level-3 calls,
   * `mqs_get_comm_group`): docs/transparency.md, "Optional entry points". */
  MQD_PROXY_ERR_NO_ENTRY_POINT = MQD_PROXY_ERR_FIRST + 6,
  /* A handle or info pointer the proxy never issued, or one already destroyed: a process or
   * image never set up, an info already destroyed. */
  MQD_PROXY_ERR_BAD_HANDLE = MQD_PROXY_ERR_FIRST + 7,
  /* A target address wider than this debugger's `mqs_taddr_t` (32-bit debugger, 64-bit
   * target): rebuild the shim with `MQD_TADDR64=ON`. Addresses are never truncated. */
  MQD_PROXY_ERR_ADDRESS_WIDTH = MQD_PROXY_ERR_FIRST + 8,
  /* The peer sent something malformed (bad token, out-of-range field, oversized reply). */
  MQD_PROXY_ERR_PROTOCOL = MQD_PROXY_ERR_FIRST + 9,
  /* An `mqs_*` entry point was called from inside one of the debugger's own callbacks. */
  MQD_PROXY_ERR_REENTRANT = MQD_PROXY_ERR_FIRST + 10,
  /* Server side, seen by the vendor DLL: a debugger callback could not be delivered. */
  MQD_PROXY_ERR_CALLBACK_FAILED = MQD_PROXY_ERR_FIRST + 11,
  /* Server side: the DLL asked for more target memory in one fetch than the proxy allows
   * (over 64 MiB), or for a negative size. */
  MQD_PROXY_ERR_FETCH_TOO_LARGE = MQD_PROXY_ERR_FIRST + 12,
  /* A call arrived before the set-up it depends on (e.g. before `mqs_setup_basic_callbacks`),
   * or on an image or process whose set-up was answered from a record that the vendor DLL then
   * contradicted: set it up again (docs/round-trips.md, "Set-ups answered from a record"). */
  MQD_PROXY_ERR_NOT_SET_UP = MQD_PROXY_ERR_FIRST + 13,
  /* The server wants a token and got none or the wrong one ("authentication failed: wrong
   * token"), or `MQD_PROXY_TOKEN_FILE` is unusable (unreadable, empty, readable by others, not
   * a regular file), or the client cannot trust a `unix:` server: the socket, its directory or
   * the process listening on it belongs to another user (the text names the owner and what to
   * set): docs/security.md, "The client authenticates a unix server". */
  MQD_PROXY_ERR_AUTH_FAILED = MQD_PROXY_ERR_FIRST + 14,
  /* TLS does not fit between client and server: plain `tcp:` against a TLS listener ("this
   * server requires TLS"), `tls:` against a plain one ("does not use TLS"), a certificate not
   * signed by `MQD_PROXY_TLS_CA` or not naming the host, a failed handshake. */
  MQD_PROXY_ERR_TLS = MQD_PROXY_ERR_FIRST + 15,

  MQD_PROXY_ERR_LAST = MQD_PROXY_ERR_TLS
};

/* True for codes in the proxy's own range. */
#define MQD_PROXY_IS_PROXY_ERROR(code) \
  ((code) > MQD_PROXY_ERR_FIRST && (code) <= MQD_PROXY_ERR_LAST)

#ifdef __cplusplus
}
#endif

#endif /* MQD_PROXY_H */
