/*
 * mqd_proxy.h: what mqd-proxy adds to the MQD ABI that a debugger can see.
 *
 * libmqdproxy.so returns the vendor DLL's own result codes unchanged. When the proxy itself
 * fails (server unreachable, session lost, ...) it returns one of the codes below instead.
 * They live far above any range a real MQD DLL uses (DLLs count up from mqs_first_user_code =
 * 100), so they cannot be confused with the vendor's. mqs_dll_error_string() on the shim turns
 * them into a sentence that says what happened and where.
 */
#ifndef MQD_PROXY_H
#define MQD_PROXY_H

#ifdef __cplusplus
extern "C" {
#endif

enum {
  MQD_PROXY_ERR_FIRST = 0x4d510000, /* 'M','Q' << 16 */

  /* The shim could not connect to the server named by MQD_PROXY_SERVER. */
  MQD_PROXY_ERR_UNREACHABLE = MQD_PROXY_ERR_FIRST + 1,
  /* The server refused to open a session (DLL not on its allow-list, DLL failed to load,
   * protocol version mismatch, too many sessions on the server). */
  MQD_PROXY_ERR_SESSION_REFUSED = MQD_PROXY_ERR_FIRST + 2,
  /* The connection was lost during the call, or an earlier call lost it. */
  MQD_PROXY_ERR_SESSION_LOST = MQD_PROXY_ERR_FIRST + 3,
  /* The server did not answer within MQD_PROXY_TIMEOUT. */
  MQD_PROXY_ERR_TIMEOUT = MQD_PROXY_ERR_FIRST + 4,
  /* The server-side worker running the vendor DLL died (the text names signal, DLL, call). */
  MQD_PROXY_ERR_WORKER_DIED = MQD_PROXY_ERR_FIRST + 5,
  /* The vendor DLL does not export this optional entry point (level-3 calls,
   * mqs_get_comm_group). */
  MQD_PROXY_ERR_NO_ENTRY_POINT = MQD_PROXY_ERR_FIRST + 6,
  /* A handle or info pointer the proxy never issued, or one already destroyed. */
  MQD_PROXY_ERR_BAD_HANDLE = MQD_PROXY_ERR_FIRST + 7,
  /* A target address does not fit in this debugger's mqs_taddr_t (32-bit debugger, 64-bit
   * target): rebuild the shim with MQD_TADDR64=ON. Addresses are never truncated. */
  MQD_PROXY_ERR_ADDRESS_WIDTH = MQD_PROXY_ERR_FIRST + 8,
  /* The peer sent something malformed (bad token, out-of-range field, oversized reply). */
  MQD_PROXY_ERR_PROTOCOL = MQD_PROXY_ERR_FIRST + 9,
  /* An mqs_* entry point was called from inside one of the debugger's own callbacks. */
  MQD_PROXY_ERR_REENTRANT = MQD_PROXY_ERR_FIRST + 10,
  /* Server side: a debugger callback could not be delivered (given to the vendor DLL). */
  MQD_PROXY_ERR_CALLBACK_FAILED = MQD_PROXY_ERR_FIRST + 11,
  /* Server side: the DLL asked for more target memory in one fetch than the proxy allows. */
  MQD_PROXY_ERR_FETCH_TOO_LARGE = MQD_PROXY_ERR_FIRST + 12,
  /* A call arrived before the set-up it depends on (e.g. before mqs_setup_basic_callbacks). */
  MQD_PROXY_ERR_NOT_SET_UP = MQD_PROXY_ERR_FIRST + 13,
  /* The server did not accept this client's credentials: no token or the wrong one
   * (MQD_PROXY_TOKEN_FILE), or the client's own token file is unusable (unsafe mode). */
  MQD_PROXY_ERR_AUTH_FAILED = MQD_PROXY_ERR_FIRST + 14,
  /* TLS does not fit between client and server: the server requires TLS and the client spoke
   * plain TCP (or the reverse), the server's certificate did not verify against
   * MQD_PROXY_TLS_CA or does not name the host, or the TLS handshake failed. */
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
