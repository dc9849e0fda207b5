#include "DebuggerHarness.h"

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace mqd::harness {
namespace {

DebuggerHarness* gActive = nullptr;

DebuggerHarness& h() {
  if (gActive == nullptr) std::abort();  // a DLL called back after its debugger went away
  return *gActive;
}

// Counts a callback; returns how many of its kind there were, this one included.
long count(const char* name) {
  h().callbackThreads().insert(std::this_thread::get_id());
  return ++h().callbackCounts()[name];
}

using Image = DebuggerHarness::Image;
using Process = DebuggerHarness::Process;
using Job = DebuggerHarness::Job;

Image* imageOf(mqs_image* i) { return reinterpret_cast<Image*>(i); }
Process* processOf(mqs_process* p) { return reinterpret_cast<Process*>(p); }
Job* jobOf(mqs_job* j) { return reinterpret_cast<Job*>(j); }

// ---- basic ----

void* cbMalloc(size_t size) {
  count("malloc");
  return std::calloc(1, size == 0 ? 1 : size);
}
void cbFree(void* p) {
  count("free");
  std::free(p);
}
void cbDprints(const char* text) {
  count("dprints");
  h().effects().push_back(std::string("dprints: ") + (text ? text : "(null)"));
}
// A query, not an effect: a proxy may answer it from what it asked before.
char* cbErrorString(int code) {
  count("errorstring");
  switch (code) {
    case DebuggerHarness::kNoSymbol: return const_cast<char*>("harness: no such symbol");
    case DebuggerHarness::kUnmapped: return const_cast<char*>("harness: memory not mapped");
    case DebuggerHarness::kBadHandle: return const_cast<char*>("harness: bad handle");
    default: return nullptr;
  }
}
void cbPutImageInfo(mqs_image* image, mqs_image_info* info) {
  count("put_image_info");
  if (imageOf(image)->info != nullptr && imageOf(image)->info != info) h().retire(imageOf(image)->info);
  imageOf(image)->info = info;
  h().effects().push_back("put_image_info(" + imageOf(image)->name + ", " + h().infoName(info) + ")");
}
mqs_image_info* cbGetImageInfo(mqs_image* image) {
  count("get_image_info");
  return imageOf(image)->info;
}
void cbPutProcessInfo(mqs_process* process, mqs_process_info* info) {
  count("put_process_info");
  if (processOf(process)->info != nullptr && processOf(process)->info != info) h().retire(processOf(process)->info);
  processOf(process)->info = info;
  h().effects().push_back("put_process_info(" + processOf(process)->name + ", " +
                          h().infoName(info) + ")");
}
mqs_process_info* cbGetProcessInfo(mqs_process* process) {
  count("get_process_info");
  return processOf(process)->info;
}
void cbPutJobInfo(mqs_job* job, mqs_job_info* info) {
  count("put_job_info");
  if (jobOf(job)->info != nullptr && jobOf(job)->info != info) h().retire(jobOf(job)->info);
  jobOf(job)->info = info;
  h().effects().push_back("put_job_info(job, " + h().infoName(info) + ")");
}
mqs_job_info* cbGetJobInfo(mqs_job* job) {
  count("get_job_info");
  return jobOf(job)->info;
}

// ---- image ----

void cbGetTypeSizes(mqs_process* process, mqs_target_type_sizes* sizes) {
  count("get_type_sizes");
  h().early("get_type_sizes", processOf(process), false);
  std::vector<int> s = processOf(process)->target->typeSizes();
  int* out = &sizes->short_size;
  for (int i = 0; i < h().options().typeSizeInts; ++i) out[i] = s[static_cast<size_t>(i)];
}
int cbFindFunction(mqs_image* image, char* name, mqs_lang_code, mqs_taddr_t* addr) {
  count("find_function");
  h().early("find_function", imageOf(image));
  const uint64_t* a = imageOf(image)->target->function(name);
  if (a == nullptr) return DebuggerHarness::kNoSymbol;
  if (addr != nullptr) *addr = static_cast<mqs_taddr_t>(*a);
  return mqs_ok;
}
int cbFindSymbol(mqs_image* image, char* name, mqs_taddr_t* addr) {
  count("find_symbol");
  h().early("find_symbol", imageOf(image));
  const uint64_t* a = imageOf(image)->target->symbol(name);
  if (a == nullptr) return DebuggerHarness::kNoSymbol;
  if (addr != nullptr) *addr = static_cast<mqs_taddr_t>(*a);
  return mqs_ok;
}
mqs_type* cbFindType(mqs_image* image, char* name, mqs_lang_code) {
  count("find_type");
  h().early("find_type", imageOf(image));
  const TargetModel::Type* t = imageOf(image)->target->type(name);
  return reinterpret_cast<mqs_type*>(const_cast<TargetModel::Type*>(t));
}
int cbFieldOffset(mqs_type* type, char* field) {
  count("field_offset");
  const auto* t = reinterpret_cast<const TargetModel::Type*>(type);
  if (t == nullptr) return -1;
  auto it = t->fields.find(field);
  return it == t->fields.end() ? -1 : it->second;
}
int cbSizeof(mqs_type* type) {
  count("sizeof");
  const auto* t = reinterpret_cast<const TargetModel::Type*>(type);
  return t == nullptr ? 0 : t->size;
}

// ---- process ----

int cbGetGlobalRank(mqs_process* process) {
  count("get_global_rank");
  if (h().early("get_global_rank", processOf(process), true)) return MQS_INVALID_PROCESS;
  return processOf(process)->globalRank;
}
mqs_image* cbGetImage(mqs_process* process) {
  count("get_image");
  h().early("get_image", processOf(process), false);
  return reinterpret_cast<mqs_image*>(processOf(process)->image);
}
int cbFetchData(mqs_process* process, mqs_taddr_t addr, int size, void* buf) {
  count("fetch_data");
  h().early("fetch_data", processOf(process), false);
  if (size < 0) return DebuggerHarness::kUnmapped;
  return processOf(process)->target->read(addr, static_cast<size_t>(size), buf)
             ? static_cast<int>(mqs_ok)
             : static_cast<int>(DebuggerHarness::kUnmapped);
}
void cbTargetToHost(mqs_process* process, const void* in, void* out, int size) {
  count("target_to_host");
  h().early("target_to_host", processOf(process), false);
  processOf(process)->target->targetToHost(in, out, size);
}
mqs_job* cbGetProcessJob(mqs_process* process) {
  count("get_process_job");
  if (h().early("get_process_job", processOf(process), true)) return nullptr;
  return reinterpret_cast<mqs_job*>(processOf(process)->job);
}
int cbGetProcessIdentity(mqs_process* process) {
  count("get_process_identity");
  if (h().early("get_process_identity", processOf(process), true)) return MQS_INVALID_PROCESS;
  return processOf(process)->identity;
}

// ---- job ----

mqs_process* cbGetProcess(mqs_job* job, int index) {
  count("get_process");
  Job* j = jobOf(job);
  if (index < 0 || static_cast<size_t>(index) >= j->processes.size()) return nullptr;
  return reinterpret_cast<mqs_process*>(j->processes[static_cast<size_t>(index)]);
}

}  // namespace

DebuggerHarness* DebuggerHarness::active() { return gActive; }

DebuggerHarness::DebuggerHarness(const std::string& dllPath, Options options)
    : options_(options) {
  if (gActive != nullptr) throw std::logic_error("one DebuggerHarness at a time");
  basic_ = {cbMalloc,         cbFree,           cbDprints,    cbErrorString, cbPutImageInfo,
            cbGetImageInfo,   cbPutProcessInfo, cbGetProcessInfo, cbPutJobInfo, cbGetJobInfo};
  image_ = {cbGetTypeSizes, cbFindFunction, cbFindSymbol, cbFindType, cbFieldOffset, cbSizeof};
  process_ = {cbGetGlobalRank, cbGetImage,      cbFetchData,
              cbTargetToHost,  cbGetProcessJob, cbGetProcessIdentity};
  job_ = {cbGetProcess};
  gActive = this;
  try {
    dll_ = std::make_unique<MqsLibrary>(dllPath);
  } catch (...) {
    gActive = nullptr;
    throw;
  }
}

DebuggerHarness::~DebuggerHarness() {
  // As a debugger that is done with the DLL: destroy the infos it still holds (jobs, then
  // processes, then images), so that the DLL's memory is returned before it is unloaded.
  for (auto& j : jobs_) {
    if (j->info != nullptr) retiredJobInfos_.push_back(j->info);
  }
  for (auto& p : processes_) {
    if (p->info != nullptr) retiredProcessInfos_.push_back(p->info);
  }
  for (auto& i : images_) {
    if (i->info != nullptr) retiredImageInfos_.push_back(i->info);
  }
  if (dll_->destroy_job_info != nullptr) {
    for (mqs_job_info* info : retiredJobInfos_) dll_->destroy_job_info(info);
  }
  if (dll_->destroy_process_info != nullptr) {
    for (mqs_process_info* info : retiredProcessInfos_) dll_->destroy_process_info(info);
  }
  if (dll_->destroy_image_info != nullptr) {
    for (mqs_image_info* info : retiredImageInfos_) dll_->destroy_image_info(info);
  }
  dll_.reset();
  gActive = nullptr;
}

void DebuggerHarness::forgetInfos() {
  for (auto& j : jobs_) j->info = nullptr;
  for (auto& p : processes_) p->info = nullptr;
  for (auto& i : images_) i->info = nullptr;
  retiredJobInfos_.clear();
  retiredProcessInfos_.clear();
  retiredImageInfos_.clear();
}

bool DebuggerHarness::early(const char* callback, Process* process, bool needsReturn) {
  if (options_.timing == Timing::Always) return false;
  if (process->setUpCalled && (!needsReturn || process->setUpReturned)) return false;
  ++early_;
  effects_.push_back(std::string("early ") + callback + "(" + process->name + ")");
  return true;
}

bool DebuggerHarness::early(const char* callback, Image* image) {
  if (options_.timing == Timing::Always || image->setUpCalled) return false;
  ++early_;
  effects_.push_back(std::string("early ") + callback + "(" + image->name + ")");
  return true;
}

DebuggerHarness::Image* DebuggerHarness::addImage(TargetModel& target, const std::string& name) {
  images_.push_back(std::make_unique<Image>(Image{this, &target, nullptr, name}));
  return images_.back().get();
}

DebuggerHarness::Process* DebuggerHarness::addProcess(Image* image, int globalRank,
                                                      const std::string& name) {
  auto p = std::make_unique<Process>();
  p->owner = this;
  p->image = image;
  p->target = image->target;
  p->globalRank = globalRank;
  p->name = name;
  processes_.push_back(std::move(p));
  return processes_.back().get();
}

DebuggerHarness::Job* DebuggerHarness::addJob(const std::vector<Process*>& processes) {
  jobs_.push_back(std::make_unique<Job>(Job{this, processes, nullptr}));
  for (Process* p : processes) p->job = jobs_.back().get();
  return jobs_.back().get();
}

std::string DebuggerHarness::infoName(const void* info) {
  if (info == nullptr) return "NULL";
  auto it = infoNames_.find(info);
  if (it == infoNames_.end()) {
    it = infoNames_.emplace(info, nextInfoName_++).first;
  }
  return "info#" + std::to_string(it->second);
}

}  // namespace mqd::harness
