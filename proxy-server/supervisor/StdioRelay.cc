#include "StdioRelay.h"

#include <unistd.h>

#include <cstdlib>
#include <stdexcept>
#include <string>

#include "Log.h"

namespace mqd::server {
namespace {

constexpr size_t kChunk = 64 * 1024;

struct WriteRequest {
  uv_write_t req;
  char* data;
};

void openPipe(uv_loop_t* loop, uv_pipe_t* pipe, int fd, const char* what) {
  uv_pipe_init(loop, pipe, 0);
  int err = uv_pipe_open(pipe, fd);
  if (err != 0) {
    uv_close(reinterpret_cast<uv_handle_t*>(pipe), nullptr);
    throw std::runtime_error(std::string("--stdio: ") + what +
                             " must be a pipe or socket (as ssh provides): " + uv_strerror(err));
  }
}

}  // namespace

StdioRelay::StdioRelay(uv_loop_t* loop, int inFd, int outFd, int sockFd,
                       std::function<void()> onClosed)
    : onClosed_(std::move(onClosed)) {
  try {
    openPipe(loop, &in_, inFd, "standard input");
    try {
      openPipe(loop, &out_, outFd, "standard output");
    } catch (...) {
      uv_close(reinterpret_cast<uv_handle_t*>(&in_), nullptr);
      throw;
    }
  } catch (...) {
    ::close(sockFd);
    throw;
  }
  openPipe(loop, &sock_, sockFd, "the worker socket");
  in_.data = &up_;
  sock_.data = &down_;
  out_.data = &down_;
  open_ = true;
}

StdioRelay::~StdioRelay() = default;

void StdioRelay::start() {
  uv_read_start(reinterpret_cast<uv_stream_t*>(&in_), allocCallback, readCallback);
  uv_read_start(reinterpret_cast<uv_stream_t*>(&sock_), allocCallback, readCallback);
}

void StdioRelay::close() {
  if (!open_) return;
  open_ = false;
  for (uv_pipe_t* p : {&in_, &out_, &sock_}) {
    uv_close(reinterpret_cast<uv_handle_t*>(p), nullptr);
  }
}

void StdioRelay::allocCallback(uv_handle_t*, size_t, uv_buf_t* buf) {
  buf->base = static_cast<char*>(std::malloc(kChunk));
  buf->len = buf->base != nullptr ? kChunk : 0;
}

void StdioRelay::readCallback(uv_stream_t* stream, ssize_t n, const uv_buf_t* buf) {
  auto* d = static_cast<Direction*>(stream->data);
  d->relay->onRead(*d, n, buf);
}

void StdioRelay::onRead(Direction& d, ssize_t n, const uv_buf_t* buf) {
  if (n == 0) {  // EAGAIN
    std::free(buf->base);
    return;
  }
  auto* to = reinterpret_cast<uv_stream_t*>(d.to);
  if (n < 0) {
    std::free(buf->base);
    if (n != UV_EOF) {
      MQD_LOG(Info, "--stdio: %s: %s", &d == &up_ ? "standard input" : "worker socket",
              uv_strerror(static_cast<int>(n)));
    }
    uv_read_stop(reinterpret_cast<uv_stream_t*>(d.from));
    d.eof = true;
    if (&d == &up_) {
      // The debugger hung up: pass the end of the stream on to the worker.
      auto* req = new uv_shutdown_t;
      if (uv_shutdown(req, to, [](uv_shutdown_t* r, int) { delete r; }) != 0) delete req;
    } else {
      finishIfDrained();
    }
    return;
  }
  auto* w = new WriteRequest;
  w->data = buf->base;
  w->req.data = &d;
  uv_buf_t out = uv_buf_init(buf->base, static_cast<unsigned>(n));
  if (&d == &down_) ++pendingDown_;
  int err = uv_write(&w->req, to, &out, 1, [](uv_write_t* req, int status) {
    auto* w = reinterpret_cast<WriteRequest*>(req);
    auto* d = static_cast<Direction*>(req->data);
    std::free(w->data);
    delete w;
    if (status != 0 && status != UV_ECANCELED) {
      MQD_LOG(Info, "--stdio: write failed: %s", uv_strerror(status));
    }
    d->relay->onWritten(*d);
  });
  if (err != 0) {
    std::free(w->data);
    delete w;
    if (&d == &down_) --pendingDown_;
    MQD_LOG(Info, "--stdio: write failed: %s", uv_strerror(err));
    return;
  }
  if (uv_stream_get_write_queue_size(to) > kHighWater) {
    uv_read_stop(reinterpret_cast<uv_stream_t*>(d.from));
  }
}

void StdioRelay::onWritten(Direction& d) {
  if (&d == &down_) --pendingDown_;
  if (!open_) return;
  auto* to = reinterpret_cast<uv_stream_t*>(d.to);
  if (!d.eof && uv_stream_get_write_queue_size(to) <= kHighWater / 2) {
    uv_read_start(reinterpret_cast<uv_stream_t*>(d.from), allocCallback, readCallback);
  }
  finishIfDrained();
}

void StdioRelay::finishIfDrained() {
  if (!down_.eof || pendingDown_ > 0 || notified_) return;
  notified_ = true;
  if (onClosed_) onClosed_();
}

}  // namespace mqd::server
