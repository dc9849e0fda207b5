// StdioRelay: the supervisor's half of `mqd-proxy-server --stdio`. It carries one connection
// between the server's standard input/output (the channel ssh opened for the debugger) and a
// socket whose other end the worker serves like any accepted connection, in both directions,
// with backpressure (a direction stops reading while more than kHighWater bytes wait to be
// written). Handles and their lives, all on the supervisor's libuv loop:
//
//   in_    stdin (a pipe or socket): read into sock_; at its EOF sock_ is shut down for
//          writing, so the worker sees the debugger hang up
//   sock_  the supervisor's end of the socketpair: read into out_; at its EOF (the worker
//          ended or closed the connection) everything pending is written, then onClosed runs
//   out_   stdout: written only by the relay (the supervisor points fd 1 at stderr, so stray
//          output can never corrupt the stream)
//
// close() closes all three; the object must outlive the loop run that closes them.
#pragma once

#include <uv.h>

#include <functional>

namespace mqd::server {

class StdioRelay {
 public:
  // Takes ownership of the three descriptors. Throws std::runtime_error when stdin or stdout is
  // not something libuv can stream (a terminal or regular file).
  StdioRelay(uv_loop_t* loop, int inFd, int outFd, int sockFd, std::function<void()> onClosed);
  ~StdioRelay();
  StdioRelay(const StdioRelay&) = delete;
  StdioRelay& operator=(const StdioRelay&) = delete;

  void start();
  // Closes every handle (idempotent).
  void close();

  static constexpr size_t kHighWater = 1 << 20;

 private:
  struct Direction {
    StdioRelay* relay;
    uv_pipe_t* from;
    uv_pipe_t* to;
    bool eof = false;
  };

  void onRead(Direction& d, ssize_t n, const uv_buf_t* buf);
  void onWritten(Direction& d);
  void finishIfDrained();

  static void allocCallback(uv_handle_t* handle, size_t suggested, uv_buf_t* buf);
  static void readCallback(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf);

  uv_pipe_t in_, out_, sock_;
  Direction up_{this, &in_, &sock_};     // debugger -> worker
  Direction down_{this, &sock_, &out_};  // worker -> debugger
  std::function<void()> onClosed_;
  bool open_ = false;
  bool notified_ = false;
  int pendingDown_ = 0;  // writes to out_ not yet completed
};

}  // namespace mqd::server
