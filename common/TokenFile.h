// TokenFile: the shared secret a client presents and a server checks (the pre-RPC handshake,
// Handshake.h), read from a file that only its owner may read.
//
// The file holds the token on its first line (surrounding white space is ignored); anything a
// generator like `openssl rand -hex 32` writes is fine. A token is 1 to kMaxTokenBytes bytes.
#pragma once

#include <string>

namespace mqd {

// Reads the token from `path`. Throws std::runtime_error with a sentence naming the file when
// it cannot be read, is not a regular file, is empty, is too long, or when its mode grants
// any access to group or others (it must be chmod 600 or 400: a token others can read
// protects nothing).
std::string readTokenFile(const std::string& path);

}  // namespace mqd
