// CallbackTables: the callback tables the worker hands to the vendor DLL.
//
// Every callback is a C trampoline that finds the DllCall in progress and either answers on
// the server (malloc, free, put/get info, target_to_host) or asks the debugger through the
// session's Debugger capability, waiting on the call's fiber. No exception ever crosses back
// into DLL code: a failed callback returns the value that means "not available" for its type
// (documented at each trampoline) and is logged.
#pragma once

#include "mqs_interface.h"

namespace mqd::server {

const mqs_basic_callbacks* basicCallbackTable();
const mqs_image_callbacks* imageCallbackTable();
const mqs_process_callbacks* processCallbackTable();
const mqs_job_callbacks* jobCallbackTable();

}  // namespace mqd::server
