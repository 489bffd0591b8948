// The `neuron` device's native layer: what Python cannot reach through torch.library.
//
// PyTorch exposes PrivateUse1 to out-of-tree backends; this file fills the C++ slots
// that slot needs so that `neuron` tensors behave like any accelerator's:
//   * NeuronAllocator: device storage. Bytes live in host memory, and every
//     allocation and free is reported to the emulated NeuronCore's HBM allocator
//     (a Python object in torchneuron.runtime) so capacity, OOM and statistics are
//     the runtime's. The hook may raise OOM; it surfaces as torch.OutOfMemoryError.
//   * NeuronGuardImpl: a thread-local current device, so `neuron:1` is its own
//     device (a Python-level guard can only ever report device 0).
//   * NeuronGeneratorImpl / NeuronHooks: per-device default generators
//     (torch.Generator("neuron")), pinned host memory, storage resize.
//   * Kernels that only touch metadata or move bytes: empty, views, set_, resize_,
//     copies between host and device, item(). Compute ops are registered from Python.
//
// References: c10/core/Allocator.h, c10/core/impl/DeviceGuardImplInterface.h,
// ATen/detail/PrivateUse1HooksInterface.h in the torch wheel's include folder.

#include <torch/extension.h>

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/EmptyTensor.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_as_complex_native.h>
#include <ATen/ops/view_as_real_native.h>
#include <ATen/ops/view_native.h>
#include <c10/core/Allocator.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <torch/csrc/Generator.h>
#include <torch/csrc/utils/tensor_numpy.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torchneuron {
namespace {

constexpr c10::DeviceType kNeuron = c10::DeviceType::PrivateUse1;
// Upper bound for per-device tables; the emulated topology is far smaller
// (a trn2.48xlarge has 64 logical cores).
constexpr int kMaxDevices = 256;
constexpr size_t kAlignment = 64;

std::atomic<int> g_device_count{1};
std::atomic<bool> g_python_shutting_down{false};
thread_local c10::DeviceIndex t_current_device = 0;

// Python callables reporting allocations to the runtime's HbmAllocator.
// alloc_hook(device: int, nbytes: int) -> handle ; free_hook(handle) -> None.
PyObject* g_alloc_hook = nullptr;
PyObject* g_free_hook = nullptr;
// torch.OutOfMemoryError (its C symbol is not exported by libtorch_python).
PyObject* g_oom_type = nullptr;

// Asynchronous execution (torchneuron.device.streams): ops run on one execution
// thread per device, and every host access to device memory first waits for the
// device's queue. sync_hook(device: int, block: bool) -> bool (True: nothing pending)
// flushes and waits (block) or only looks (not block); it raises the error of an op
// that failed asynchronously. The execution threads themselves never wait.
PyObject* g_sync_hook = nullptr;
thread_local bool t_on_execution_thread = false;
// copy_hook(src, dst, src_alias, dst_alias) -> bool: queues a copy between two tensors
// of one neuron device after the work queued so far (True), through the host aliases
// taken at the call, or declines (False: copy now, after a wait).
PyObject* g_copy_hook = nullptr;

void check_device_index(c10::DeviceIndex index) {
  const int count = g_device_count.load();
  TORCH_CHECK(
      index >= 0 && index < count,
      "Invalid device neuron:", static_cast<int>(index),
      ": this process has ", count,
      " emulated NeuronCore(s) (torch.neuron.device_count()).");
}

bool python_usable() {
  return !g_python_shutting_down.load() && Py_IsInitialized();
}

// Native code that calls into Python from any thread (a storage's deleter runs on
// whichever thread drops the last reference: gloo's worker threads free the host
// aliases of a collective's tensors) does so inside a PythonSection. A thread that
// waits for the GIL once the interpreter has begun finalizing is ended by CPython
// with a forced unwind, which std::terminate()s when it crosses a noexcept frame
// such as a deleter ("terminate called without an active exception" at exit).
// So mark_shutdown (the last atexit hook) first stops new sections, then waits,
// the GIL released, for those already past the check to finish their Python calls.
std::atomic<int> g_python_sections{0};

class PythonSection {
 public:
  PythonSection() {
    g_python_sections.fetch_add(1);
    usable_ = python_usable();
  }
  ~PythonSection() { g_python_sections.fetch_sub(1); }
  PythonSection(const PythonSection&) = delete;
  PythonSection& operator=(const PythonSection&) = delete;
  // Whether this thread may take the GIL and call Python now.
  bool usable() const { return usable_; }

 private:
  bool usable_;
};

// At exit (the GIL held): no new sections; wait up to `timeout_s` for the open ones.
void mark_shutdown(double timeout_s) {
  g_python_shutting_down.store(true);
  pybind11::gil_scoped_release released;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  while (g_python_sections.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// Calls the sync hook for `device`; false when work is still pending (only if !block).
bool call_sync_hook(c10::DeviceIndex device, bool block) {
  if (device < 0) {
    device = t_current_device;  // a stream or event of "the current device"
  }
  PythonSection section;
  if (t_on_execution_thread || g_sync_hook == nullptr || !section.usable()) {
    return true;
  }
  pybind11::gil_scoped_acquire gil;
  PyObject* hook = g_sync_hook;
  if (hook == nullptr) {
    return true;
  }
  PyObject* result = PyObject_CallFunction(hook, "iO", static_cast<int>(device),
                                           block ? Py_True : Py_False);
  if (result == nullptr) {
    throw pybind11::error_already_set();
  }
  const bool idle = PyObject_IsTrue(result) == 1;
  Py_DECREF(result);
  return idle;
}

// Waits until every op queued on `device` has run (raising an asynchronous error).
void wait_for_device(c10::DeviceIndex device) { call_sync_hook(device, true); }

// ---------------------------------------------------------------------------
// Device memory
// ---------------------------------------------------------------------------

struct DeviceBlock {
  void* ptr;
  PyObject* handle;  // runtime's accounting handle (owned reference) or nullptr
  size_t nbytes;
  c10::DeviceIndex device;
};

// Bytes of device storages alive per device, for torch.profiler's memory events
// (profile_memory=True): each allocation and free is reported with the running total.
std::array<std::atomic<int64_t>, kMaxDevices> g_storage_bytes{};

void report_memory(void* ptr, int64_t delta, c10::DeviceIndex device) {
  const int64_t total = g_storage_bytes[device].fetch_add(delta) + delta;
  if (c10::memoryProfilingEnabled()) {
    c10::reportMemoryUsageToProfiler(ptr, delta, static_cast<size_t>(total),
                                     static_cast<size_t>(total), c10::Device(kNeuron, device));
  }
}

void release_block(void* ctx) {
  auto* block = static_cast<DeviceBlock*>(ctx);
  report_memory(block->ptr, -static_cast<int64_t>(block->nbytes), block->device);
  std::free(block->ptr);
  PythonSection section;
  if (block->handle != nullptr && section.usable()) {
    pybind11::gil_scoped_acquire gil;
    if (g_free_hook != nullptr) {
      // A storage may be freed while an error is on its way out to Python (a temporary
      // dropped during unwinding): set that error aside for the hook and restore it after,
      // or the hook reports it as its own and the caller sees "error return without
      // exception set".
      PyObject *pending_type, *pending_value, *pending_traceback;
      PyErr_Fetch(&pending_type, &pending_value, &pending_traceback);
      PyObject* result = PyObject_CallOneArg(g_free_hook, block->handle);
      if (result == nullptr) {
        // A deleter cannot throw: report the problem and carry on.
        PyErr_WriteUnraisable(g_free_hook);
      }
      Py_XDECREF(result);
      Py_DECREF(block->handle);
      PyErr_Restore(pending_type, pending_value, pending_traceback);
    } else {
      Py_DECREF(block->handle);
    }
  }
  delete block;
}

// Asks the runtime for `nbytes` of the device's HBM; raises as the runtime does.
PyObject* account_allocation(c10::DeviceIndex device, size_t nbytes) {
  PythonSection section;
  if (!section.usable()) {
    return nullptr;
  }
  pybind11::gil_scoped_acquire gil;
  if (g_alloc_hook == nullptr) {
    return nullptr;
  }
  PyObject* handle = PyObject_CallFunction(
      g_alloc_hook, "in", static_cast<int>(device), static_cast<Py_ssize_t>(nbytes));
  if (handle != nullptr) {
    return handle;
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyErr_NormalizeException(&type, &value, &traceback);
  std::string message = "allocation on neuron device failed";
  if (value != nullptr) {
    PyObject* text = PyObject_Str(value);
    if (text != nullptr) {
      const char* utf8 = PyUnicode_AsUTF8(text);
      if (utf8 != nullptr) {
        message = utf8;
      }
      Py_DECREF(text);
    }
  }
  const bool is_oom = type != nullptr &&
      g_oom_type != nullptr && PyErr_GivenExceptionMatches(type, g_oom_type);
  Py_XDECREF(type);
  Py_XDECREF(value);
  Py_XDECREF(traceback);
  PyErr_Clear();
  if (is_oom) {
    TORCH_CHECK_WITH(OutOfMemoryError, false, message);
  }
  TORCH_CHECK(false, message);
}

struct NeuronAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    const c10::DeviceIndex device = t_current_device;
    const c10::Device where(kNeuron, device);
    if (nbytes == 0) {
      return c10::DataPtr(nullptr, nullptr, &release_nothing, where);
    }
    PyObject* handle = nullptr;
    try {
      handle = account_allocation(device, nbytes);
    } catch (const c10::OutOfMemoryError&) {
      // Queued ops still hold tensors the program has dropped: once they have run,
      // their memory is free. Wait for them and try once more.
      if (t_on_execution_thread || g_sync_hook == nullptr) {
        throw;
      }
      wait_for_device(device);
      handle = account_allocation(device, nbytes);
    }
    void* ptr = nullptr;
    const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
    if (posix_memalign(&ptr, kAlignment, rounded) != 0 || ptr == nullptr) {
      if (handle != nullptr) {
        pybind11::gil_scoped_acquire gil;
        PyObject* result = PyObject_CallOneArg(g_free_hook, handle);
        Py_XDECREF(result);
        PyErr_Clear();
        Py_DECREF(handle);
      }
      TORCH_CHECK_WITH(
          OutOfMemoryError, false, "host memory backing neuron:", static_cast<int>(device),
          " is exhausted (asked for ", nbytes, " bytes)");
    }
    auto* block = new DeviceBlock{ptr, handle, nbytes, device};
    report_memory(ptr, static_cast<int64_t>(nbytes), device);
    return c10::DataPtr(ptr, block, &release_block, where);
  }

  static void release_nothing(void*) {}

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

NeuronAllocator g_allocator;

// Pinned host memory: ordinary host memory, remembered so is_pinned() is true.
std::mutex g_pinned_mutex;
std::unordered_set<const void*> g_pinned;

void release_pinned(void* ptr) {
  {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    g_pinned.erase(ptr);
  }
  std::free(ptr);
}

struct PinnedHostAllocator final : public c10::Allocator {
  c10::DataPtr allocate(size_t nbytes) override {
    void* ptr = nullptr;
    if (nbytes > 0) {
      const size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
      TORCH_CHECK_WITH(
          OutOfMemoryError, posix_memalign(&ptr, kAlignment, rounded) == 0,
          "could not pin ", nbytes, " bytes of host memory");
      std::lock_guard<std::mutex> lock(g_pinned_mutex);
      g_pinned.insert(ptr);
    }
    return c10::DataPtr(ptr, ptr, &release_pinned, c10::Device(c10::DeviceType::CPU));
  }
  c10::DeleterFnPtr raw_deleter() const override { return &release_pinned; }
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    std::memcpy(dest, src, count);
  }
};

PinnedHostAllocator g_pinned_allocator;

// Grows or shrinks a device storage in place (new block, bytes copied).
void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  wait_for_device(storage.device().index());  // queued ops may still write the old bytes
  c10::DeviceGuard guard(storage.device());
  c10::DataPtr fresh = g_allocator.allocate(new_nbytes);
  const size_t keep = std::min(storage.nbytes(), new_nbytes);
  if (keep > 0 && storage.data() != nullptr) {
    std::memcpy(fresh.get(), storage.data(), keep);
  }
  storage.set_data_ptr_noswap(std::move(fresh));
  storage.set_nbytes(new_nbytes);
}

// ---------------------------------------------------------------------------
// Device guard
// ---------------------------------------------------------------------------

struct NeuronEvent {
  std::chrono::steady_clock::time_point when;
};

struct NeuronGuardImpl final : public c10::impl::DeviceGuardImplInterface {
  c10::DeviceType type() const override { return kNeuron; }

  c10::Device exchangeDevice(c10::Device device) const override {
    const c10::Device previous = getDevice();
    if (device.index() != previous.index()) {
      setDevice(device);
    }
    return previous;
  }
  c10::Device getDevice() const override { return c10::Device(kNeuron, t_current_device); }
  void setDevice(c10::Device device) const override {
    TORCH_CHECK(device.type() == kNeuron, "expected a neuron device, got ", device);
    if (device.index() < 0) {
      return;  // "the current device": nothing to change
    }
    check_device_index(device.index());
    t_current_device = device.index();
  }
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0) {
      t_current_device = device.index();
    }
  }
  // The generic c10 stream API (torch.Stream("neuron"), the autograd engine) sees one
  // stream per device: torch.neuron.Stream's streams all feed one queue per device
  // (torchneuron.device.streams), so waiting for "the stream" waits for that queue.
  c10::Stream getStream(c10::Device device) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream getNewStream(c10::Device device, int) const override {
    return c10::Stream(c10::Stream::DEFAULT, device);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    return c10::Stream(c10::Stream::DEFAULT, stream.device());
  }
  c10::DeviceIndex deviceCount() const noexcept override {
    return static_cast<c10::DeviceIndex>(g_device_count.load());
  }
  // An event is recorded once the device's queued work has run (the host clock then):
  // conservative, as if every stream of the device were synchronized at the record.
  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex,
              const c10::EventFlag) const override {
    wait_for_device(stream.device_index());
    if (*event == nullptr) {
      *event = new NeuronEvent();
    }
    static_cast<NeuronEvent*>(*event)->when = std::chrono::steady_clock::now();
  }
  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete static_cast<NeuronEvent*>(event);
  }
  void block(void*, const c10::Stream&) const override {}
  bool queryEvent(void*) const override { return true; }
  bool queryStream(const c10::Stream& stream) const override {
    return call_sync_hook(stream.device_index(), false);
  }
  void synchronizeStream(const c10::Stream& stream) const override {
    wait_for_device(stream.device_index());
  }
  void synchronizeEvent(void*) const override {}
  void synchronizeDevice(const c10::DeviceIndex device) const override {
    wait_for_device(device < 0 ? t_current_device : device);
  }
  void recordDataPtrOnStream(const c10::DataPtr&, const c10::Stream&) const override {}
  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    TORCH_CHECK(start != nullptr && end != nullptr,
                "elapsed_time needs two recorded neuron events");
    const auto delta = static_cast<NeuronEvent*>(end)->when -
        static_cast<NeuronEvent*>(start)->when;
    return std::chrono::duration<double, std::milli>(delta).count();
  }
};

C10_REGISTER_GUARD_IMPL(PrivateUse1, NeuronGuardImpl);

// ---------------------------------------------------------------------------
// Generators and hooks
// ---------------------------------------------------------------------------

// The CPU Mersenne-Twister engine, labelled with a neuron device. Random ops run
// the CPU kernel with this engine's state, so a seed gives the same numbers as
// on CPU (useful when comparing a model across devices).
struct NeuronGeneratorImpl final : public at::CPUGeneratorImpl {
  explicit NeuronGeneratorImpl(c10::DeviceIndex index,
                               uint64_t seed = c10::default_rng_seed_val)
      : at::CPUGeneratorImpl(seed) {
    device_ = c10::Device(kNeuron, index);
    key_set_ = c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
  }

 private:
  NeuronGeneratorImpl* clone_impl() const override {
    auto* copy = new NeuronGeneratorImpl(device_.index());
    copy->set_state(*get_state());
    return copy;
  }
};

std::mutex g_generator_mutex;
std::array<at::Generator, kMaxDevices> g_default_generators;

const at::Generator& default_generator(c10::DeviceIndex index) {
  if (index < 0) {
    index = t_current_device;
  }
  check_device_index(index);
  std::lock_guard<std::mutex> lock(g_generator_mutex);
  at::Generator& slot = g_default_generators[index];
  if (!slot.defined()) {
    slot = at::make_generator<NeuronGeneratorImpl>(index);
  }
  return slot;
}

struct NeuronHooks final : public at::PrivateUse1HooksInterface {
  bool isBuilt() const override { return true; }
  bool isAvailable() const override { return g_device_count.load() > 0; }
  const at::Generator& getDefaultGenerator(c10::DeviceIndex index) const override {
    return default_generator(index);
  }
  at::Generator getNewGenerator(c10::DeviceIndex index) const override {
    if (index < 0) {
      index = t_current_device;
    }
    check_device_index(index);
    return at::make_generator<NeuronGeneratorImpl>(index);
  }
  at::Device getDeviceFromPtr(void*) const override {
    return c10::Device(kNeuron, t_current_device);
  }
  bool isPinnedPtr(const void* data) const override {
    std::lock_guard<std::mutex> lock(g_pinned_mutex);
    return g_pinned.count(data) > 0;
  }
  c10::Allocator* getPinnedMemoryAllocator() const override { return &g_pinned_allocator; }
  bool hasPrimaryContext(c10::DeviceIndex) const override { return true; }
  c10::DeviceIndex deviceCount() const override {
    return static_cast<c10::DeviceIndex>(g_device_count.load());
  }
  c10::DeviceIndex getCurrentDevice() const override { return t_current_device; }
  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    const c10::DeviceIndex previous = t_current_device;
    check_device_index(device);
    t_current_device = device;
    return previous;
  }
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchangeDevice(device);
  }
  void setCurrentDevice(c10::DeviceIndex device) const override {
    check_device_index(device);
    t_current_device = device;
  }
  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_nbytes) const override {
    resize_storage_bytes(storage, new_nbytes);
  }
};

// ---------------------------------------------------------------------------
// Kernels that need no compilation
// ---------------------------------------------------------------------------

// A CPU tensor over the same bytes as `device_tensor` (same sizes, strides and
// offset), made without waiting for the device's queue. It keeps the device storage
// alive for as long as it lives. A `resizable` alias may be resized by a CPU kernel
// (out= arguments): it then moves to fresh host memory, which the caller detects and
// copies back.
at::Tensor make_host_alias(const at::Tensor& device_tensor, bool resizable) {
  if (device_tensor.device().type() != kNeuron) {
    return device_tensor;
  }
  const c10::Storage& storage = device_tensor.storage();
  void* base = storage.mutable_data();
  if (base == nullptr) {
    // No bytes (numel 0): an empty CPU tensor of the right shape will do.
    auto options = at::TensorOptions().dtype(device_tensor.dtype()).device(at::kCPU);
    return at::empty_strided(device_tensor.sizes(), device_tensor.strides(), options);
  }
  auto* keep_alive = new c10::Storage(storage);
  c10::Storage host_storage(
      c10::Storage::use_byte_size_t(), storage.nbytes(),
      c10::DataPtr(base, keep_alive,
                   [](void* ctx) { delete static_cast<c10::Storage*>(ctx); },
                   c10::Device(at::kCPU)),
      resizable ? c10::GetAllocator(c10::DeviceType::CPU) : nullptr, resizable);
  at::Tensor alias = at::detail::make_tensor<c10::TensorImpl>(
      std::move(host_storage), c10::DispatchKeySet(c10::DispatchKey::CPU),
      device_tensor.dtype());
  alias.unsafeGetTensorImpl()->set_sizes_and_strides(
      device_tensor.sizes(), device_tensor.strides(), device_tensor.storage_offset());
  // A lazily conjugated or negated view reads as such on the host too.
  alias._set_conj(device_tensor.is_conj());
  alias._set_neg(device_tensor.is_neg());
  return alias;
}

// The host alias of a device tensor once every op queued on its device has run: what
// every host access (copies, item(), the host routes) goes through.
at::Tensor host_alias(const at::Tensor& device_tensor, bool resizable) {
  if (device_tensor.device().type() == kNeuron) {
    wait_for_device(device_tensor.device().index());
  }
  return make_host_alias(device_tensor, resizable);
}

// `host` itself when dense and plain, else a contiguous copy with conjugation and
// negation applied: what a compiled program reads.
at::Tensor readable(at::Tensor host) {
  if (host.is_conj() || host.is_neg()) {
    host = host.resolve_conj().resolve_neg();
  }
  if (!host.is_contiguous()) {
    host = host.contiguous();
  }
  return host;
}

// ---------------------------------------------------------------------------
// Program inputs and outputs (the per-op hot path)
// ---------------------------------------------------------------------------

// Dtypes numpy lacks travel as same-width integers, viewed as ml_dtypes on the
// Python side: scalar type -> (integer carrier, ml_dtypes numpy dtype, the carrier's
// numpy name). Python registers each from its dtype table (torchneuron.target.dtypes).
struct NumpyView {
  at::ScalarType carrier;
  PyObject* numpy_dtype;  // owned reference, kept for the process
  std::string carrier_numpy_name;
};
std::unordered_map<int, NumpyView> g_numpy_views;

void register_numpy_view(at::ScalarType dtype, at::ScalarType carrier, pybind11::object numpy_dtype,
                         const std::string& carrier_numpy_name) {
  if (g_numpy_views.count(static_cast<int>(dtype)) > 0) {
    return;
  }
  g_numpy_views[static_cast<int>(dtype)] =
      NumpyView{carrier, numpy_dtype.release().ptr(), carrier_numpy_name};
}

// Numpy arrays over the host data of `tensors` (zero-copy where dense and plain).
// `orders[i]`, where given and not None, is the axis order (outermost first) in which
// tensor i is laid out densely: its array is the tensor permuted to that order, which
// is contiguous, so a transposed weight reaches its program without a copy (the program
// takes it in that order and permutes it back: compiled.dense_orders).
pybind11::list host_arrays(const std::vector<at::Tensor>& tensors,
                           const pybind11::object& orders = pybind11::none()) {
  pybind11::list arrays(tensors.size());
  const bool ordered = !orders.is_none();
  for (size_t i = 0; i < tensors.size(); ++i) {
    const at::Tensor& tensor = tensors[i];
    // A neuron tensor, or a launch's host alias of one; a CPU operand (a 0-d tensor
    // standing for a scalar) may require grad.
    at::Tensor host =
        host_alias(tensor.device().type() == kNeuron ? tensor : tensor.detach(), false);
    pybind11::object order = ordered ? pybind11::object(orders[pybind11::int_(i)]) : pybind11::none();
    if (!order.is_none()) {
      host = host.permute(order.cast<std::vector<int64_t>>());
    }
    host = readable(host);  // a copy only where the layout is not the one promised
    auto view = g_numpy_views.find(static_cast<int>(host.scalar_type()));
    if (view == g_numpy_views.end()) {
      arrays[i] = pybind11::reinterpret_steal<pybind11::object>(torch::utils::tensor_to_numpy(host));
    } else {
      auto carrier = pybind11::reinterpret_steal<pybind11::object>(
          torch::utils::tensor_to_numpy(host.view(view->second.carrier)));
      arrays[i] = carrier.attr("view")(pybind11::handle(view->second.numpy_dtype));
    }
  }
  return arrays;
}

// A CPU tensor over a numpy array's memory (arrays of ml_dtypes through their carrier).
at::Tensor tensor_over_array(const pybind11::handle& array, at::ScalarType expected) {
  auto view = g_numpy_views.find(static_cast<int>(expected));
  if (view == g_numpy_views.end() ||
      !pybind11::object(array.attr("dtype")).equal(pybind11::handle(view->second.numpy_dtype))) {
    return torch::utils::tensor_from_numpy(array.ptr(), /*warn_if_not_writeable=*/false);
  }
  pybind11::object carrier = array.attr("view")(view->second.carrier_numpy_name);
  return torch::utils::tensor_from_numpy(carrier.ptr(), false).view(expected);
}

// Copies a program output into a tensor's host memory. A wider output dtype than the
// tensor's (a program that computed a value in float64) is converted as copy_ does.
void copy_array_into(const at::Tensor& host_target, const pybind11::handle& array) {
  at::Tensor source = tensor_over_array(array, host_target.scalar_type());
  TORCH_CHECK(source.sizes() == host_target.sizes(), "program output has shape ",
              source.sizes(), " where ", host_target.sizes(), " was expected");
  if (source.scalar_type() == host_target.scalar_type() && source.is_contiguous() &&
      host_target.is_contiguous() && !host_target.is_conj() && !host_target.is_neg()) {
    const size_t nbytes = source.nbytes();
    if (nbytes > 0) {
      std::memcpy(host_target.data_ptr(), source.const_data_ptr(), nbytes);
    }
    return;
  }
  host_target.copy_(source);
}

// New device tensors on `device`, one per meta (sizes, strides, dtype), holding `arrays`.
pybind11::list device_tensors_from(
    const pybind11::sequence& arrays, const pybind11::sequence& metas, int device) {
  check_device_index(static_cast<c10::DeviceIndex>(device));
  c10::DeviceGuard guard(c10::Device(kNeuron, static_cast<c10::DeviceIndex>(device)));
  const size_t count = pybind11::len(metas);
  TORCH_CHECK(pybind11::len(arrays) >= count, "program produced ", pybind11::len(arrays),
              " outputs where ", count, " were expected");
  pybind11::list results(count);
  for (size_t i = 0; i < count; ++i) {
    auto meta = metas[i].cast<pybind11::tuple>();
    auto sizes = meta[0].cast<std::vector<int64_t>>();
    auto strides = meta[1].cast<std::vector<int64_t>>();
    auto dtype = meta[2].cast<at::ScalarType>();
    at::Tensor result = at::detail::empty_strided_generic(
        sizes, strides, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), dtype);
    copy_array_into(host_alias(result, false), arrays[i]);
    results[i] = pybind11::cast(result);
  }
  return results;
}

// The new outputs of a compiled op (sizes, strides, dtype each), converted once per
// compiled entry so that a launch allocates them without reading Python tuples.
struct OutputMeta {
  std::vector<int64_t> sizes;
  std::vector<int64_t> strides;
  at::ScalarType dtype;
};
struct OutputMetas {
  std::vector<OutputMeta> metas;
};

OutputMetas make_output_metas(const pybind11::sequence& metas) {
  OutputMetas converted;
  for (const auto& item : metas) {
    auto meta = item.cast<pybind11::tuple>();
    converted.metas.push_back(OutputMeta{meta[0].cast<std::vector<int64_t>>(),
                                         meta[1].cast<std::vector<int64_t>>(),
                                         meta[2].cast<at::ScalarType>()});
  }
  return converted;
}

// The host views of a queued launch: its inputs as they were when it was issued and
// the host aliases of its outputs. Kept on the C++ side (no Python object per view,
// nothing for the garbage collector to walk) until a caller asks for them.
struct HostViews {
  std::vector<at::Tensor> inputs;
  std::vector<at::Tensor> outputs;
};

// What an asynchronous launch needs, made on the calling thread in one call:
// (fresh, views). `fresh` are new device tensors, one per meta (sizes, strides, dtype);
// `views.inputs` capture each input as it is now (a host alias of a device tensor,
// whose bytes are read when the op runs; a copy of a CPU operand, which the caller may
// change before then); `views.outputs` are host aliases of `fresh` then of `targets`
// (the mutated arguments), which the op's results are written into. Aliases pin the
// metadata and keep the storages alive until the op has run.
pybind11::tuple capture_launch(const std::vector<at::Tensor>& inputs, const OutputMetas& metas,
                               const std::vector<at::Tensor>& targets, int device) {
  check_device_index(static_cast<c10::DeviceIndex>(device));
  std::vector<at::Tensor> fresh;
  fresh.reserve(metas.metas.size());
  {
    c10::DeviceGuard guard(c10::Device(kNeuron, static_cast<c10::DeviceIndex>(device)));
    for (const OutputMeta& meta : metas.metas) {
      fresh.push_back(at::detail::empty_strided_generic(
          meta.sizes, meta.strides, &g_allocator,
          c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), meta.dtype));
    }
  }
  HostViews views;
  views.inputs.reserve(inputs.size());
  for (const at::Tensor& tensor : inputs) {
    if (tensor.device().type() == kNeuron) {
      views.inputs.push_back(make_host_alias(tensor, false));
    } else {
      views.inputs.push_back(tensor.detach().clone());
    }
  }
  views.outputs.reserve(fresh.size() + targets.size());
  for (const at::Tensor& tensor : fresh) {
    views.outputs.push_back(make_host_alias(tensor, false));
  }
  for (const at::Tensor& tensor : targets) {
    views.outputs.push_back(make_host_alias(tensor, false));
  }
  return pybind11::make_tuple(fresh, std::move(views));
}

// Copies program outputs into host tensors (host_outputs of capture_launch), in order.
void write_arrays(const std::vector<at::Tensor>& targets, const pybind11::sequence& arrays) {
  TORCH_CHECK(pybind11::len(arrays) >= targets.size(), "program produced ",
              pybind11::len(arrays), " outputs where ", targets.size(), " were expected");
  for (size_t i = 0; i < targets.size(); ++i) {
    copy_array_into(targets[i], arrays[i]);
  }
}

at::ScalarType neuron_dtype_or_default(std::optional<at::ScalarType> dtype) {
  return dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
}

c10::Device resolve_device(std::optional<c10::Device> device) {
  if (!device.has_value() || !device->has_index()) {
    return c10::Device(kNeuron, t_current_device);
  }
  check_device_index(device->index());
  return *device;
}

at::Tensor empty_memory_format(
    c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<c10::Device> device,
    std::optional<bool> pin_memory, std::optional<at::MemoryFormat> memory_format) {
  TORCH_CHECK(!pin_memory.value_or(false), "neuron tensors cannot be pinned; pin CPU tensors");
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "neuron supports only the strided layout, got ", *layout);
  c10::DeviceGuard guard(resolve_device(device));
  return at::detail::empty_generic(
      size, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      neuron_dtype_or_default(dtype), memory_format);
}

at::Tensor empty_strided(
    c10::IntArrayRef size, c10::IntArrayRef stride, std::optional<at::ScalarType> dtype,
    std::optional<at::Layout> layout, std::optional<c10::Device> device,
    std::optional<bool> pin_memory) {
  TORCH_CHECK(!pin_memory.value_or(false), "neuron tensors cannot be pinned; pin CPU tensors");
  TORCH_CHECK(layout.value_or(at::kStrided) == at::kStrided,
              "neuron supports only the strided layout, got ", *layout);
  c10::DeviceGuard guard(resolve_device(device));
  return at::detail::empty_strided_generic(
      size, stride, &g_allocator, c10::DispatchKeySet(c10::DispatchKey::PrivateUse1),
      neuron_dtype_or_default(dtype));
}

// Host<->device and device<->device transfers: both sides are host memory, so a
// transfer is the CPU copy kernel (dtype conversion, broadcasting, strides) over aliases.
at::Tensor copy_from(const at::Tensor& self, const at::Tensor& dst, bool /*non_blocking*/) {
  if (dst.numel() == 0) {
    return dst;
  }
  // Device to device: queued like an op, so that a clone (autograd clones every new
  // gradient) does not wait for the whole queue.
  PythonSection section;
  if (self.is_privateuseone() && dst.is_privateuseone() && !t_on_execution_thread &&
      g_copy_hook != nullptr && section.usable()) {
    pybind11::gil_scoped_acquire gil;
    auto hook = pybind11::reinterpret_borrow<pybind11::object>(g_copy_hook);
    // The host aliases are taken now, as a launch's are: a later in-place change of
    // either tensor's metadata (transpose_, resize_) must not change what is copied.
    if (hook(self, dst, make_host_alias(self, false), make_host_alias(dst, false))
            .cast<bool>()) {
      return dst;
    }
  }
  at::Tensor dst_host = host_alias(dst, false);
  dst_host.copy_(host_alias(self, false));
  return dst;
}

at::Tensor copy_from_and_resize(const at::Tensor& self, const at::Tensor& dst) {
  if (dst.sizes() != self.sizes()) {
    dst.resize_(self.sizes());
  }
  return copy_from(self, dst, false);
}

void ensure_storage_fits(const at::Tensor& self) {
  const size_t needed = at::detail::computeStorageNbytes(
      self.sizes(), self.strides(), self.dtype().itemsize(),
      static_cast<size_t>(self.storage_offset()));
  if (self.numel() > 0 && needed > self.storage().nbytes()) {
    resize_storage_bytes(self.storage(), needed);
  }
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_sizes_contiguous(size);
  if (memory_format.has_value()) {
    TORCH_CHECK(*memory_format != at::MemoryFormat::Preserve,
                "Unsupported memory format Preserve for resize_ on neuron");
    impl->empty_tensor_restride(*memory_format);
  }
  ensure_storage_fits(self);
  return self;
}

at::Tensor& set_storage(at::Tensor& self, c10::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  TORCH_CHECK(source.device() == self.device() || !source.data(),
              "set_: expected a storage on ", self.device(), " but got one on ",
              source.device());
  wait_for_device(self.device().index());
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_keep_dtype(std::move(source));
  impl->set_storage_offset(storage_offset);
  if (stride.empty()) {
    impl->set_sizes_contiguous(size);
  } else {
    impl->set_sizes_and_strides(size, stride);
  }
  ensure_storage_fits(self);
  return self;
}

at::Tensor& set_source_storage(at::Tensor& self, c10::Storage source) {
  const int64_t numel = static_cast<int64_t>(source.nbytes() / self.dtype().itemsize());
  return set_storage(self, std::move(source), 0, {numel}, {});
}

at::Tensor& set_source_tensor(at::Tensor& self, const at::Tensor& source) {
  if (self.is_same(source)) {
    return self;
  }
  return set_storage(self, source.storage(), source.storage_offset(), source.sizes(),
                     source.strides());
}

at::Tensor& set_empty(at::Tensor& self) {
  c10::DeviceGuard guard(self.device());
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, &g_allocator, /*resizable=*/true);
  return set_storage(self, std::move(storage), 0, {0}, {});
}

at::Scalar local_scalar_dense(const at::Tensor& self) {
  return host_alias(self, false).item();
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", TORCH_FN(empty_memory_format));
  m.impl("empty_strided", TORCH_FN(empty_strided));
  m.impl("_copy_from", TORCH_FN(copy_from));
  m.impl("_copy_from_and_resize", TORCH_FN(copy_from_and_resize));
  m.impl("resize_", TORCH_FN(resize_));
  m.impl("set_.source_Storage_storage_offset", TORCH_FN(set_storage));
  m.impl("set_.source_Storage", TORCH_FN(set_source_storage));
  m.impl("set_.source_Tensor", TORCH_FN(set_source_tensor));
  m.impl("set_", TORCH_FN(set_empty));
  m.impl("_local_scalar_dense", TORCH_FN(local_scalar_dense));
  // Views share the device storage: the CPU implementations only touch metadata.
  m.impl("view", TORCH_FN(at::native::view));
  m.impl("as_strided", TORCH_FN(at::native::as_strided_tensorimpl));
  // In place, a view op too (t_, transpose_, squeeze_, ... call it): it changes the
  // tensor's sizes and strides and never its data.
  m.impl("as_strided_", TORCH_FN(at::native::as_strided__symint));
  m.impl("_reshape_alias", TORCH_FN(at::native::_reshape_alias));
  m.impl("unfold", TORCH_FN(at::native::unfold));
  m.impl("view_as_real", TORCH_FN(at::native::view_as_real));
  m.impl("view_as_complex", TORCH_FN(at::native::view_as_complex));
}

// A conjugated or negated source reaches the transfer itself (which applies the
// bit through the CPU copy kernel). Materialising it first, as the default
// fallback does, would call the transfer again with the same source, forever.
TORCH_LIBRARY_IMPL(aten, Conjugate, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

TORCH_LIBRARY_IMPL(aten, Negative, m) {
  m.impl("_copy_from", torch::CppFunction::makeFallthrough());
  m.impl("_copy_from_and_resize", torch::CppFunction::makeFallthrough());
}

bool g_hooks_registered = false;

}  // namespace
}  // namespace torchneuron

// ---------------------------------------------------------------------------
// Python surface (torchneuron.device._C)
// ---------------------------------------------------------------------------

namespace torchneuron {
void init_profiler(pybind11::module_& m);  // neuron_profiler.cpp: torch.profiler events
}  // namespace torchneuron

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  using namespace torchneuron;
  init_profiler(m);
  m.doc() = "Native layer of the neuron device: allocator, device guard, generators.";
  g_oom_type = pybind11::object(pybind11::module_::import("torch").attr("OutOfMemoryError")).release().ptr();

  m.def("set_device_count", [](int count) {
    TORCH_CHECK(count >= 0 && count <= kMaxDevices, "device count ", count,
                " outside [0, ", kMaxDevices, "]");
    g_device_count.store(count);
  });
  m.def("device_count", []() { return g_device_count.load(); });
  m.def("current_device", []() { return static_cast<int>(t_current_device); });
  m.def("set_device", [](int index) {
    check_device_index(static_cast<c10::DeviceIndex>(index));
    t_current_device = static_cast<c10::DeviceIndex>(index);
  });
  m.def("register_hooks", []() {
    if (!g_hooks_registered) {
      at::RegisterPrivateUse1HooksInterface(new NeuronHooks());
      // Host storages created "for" neuron (torch.UntypedStorage(n, device=...)).
      c10::SetAllocator(kNeuron, &g_allocator);
      g_hooks_registered = true;
    }
  });
  m.def("set_memory_hooks", [](pybind11::object alloc_hook, pybind11::object free_hook) {
    Py_XDECREF(g_alloc_hook);
    Py_XDECREF(g_free_hook);
    g_alloc_hook = alloc_hook.is_none() ? nullptr : alloc_hook.release().ptr();
    g_free_hook = free_hook.is_none() ? nullptr : free_hook.release().ptr();
  });
  m.def("mark_shutdown", &mark_shutdown, pybind11::arg("timeout_s") = 5.0,
        "At exit: stop native code's calls into Python; wait for those under way.");
  m.def("default_generator", [](int index) {
    return pybind11::reinterpret_steal<pybind11::object>(
        THPGenerator_Wrap(default_generator(static_cast<c10::DeviceIndex>(index))));
  });
  m.def("host_alias", &host_alias,
        "CPU tensor aliasing a neuron tensor's bytes (same sizes, strides, offset).",
        pybind11::arg("tensor"), pybind11::arg("resizable") = false);
  m.def("register_numpy_view", &register_numpy_view,
        "Carry `dtype` (absent from numpy) as `carrier` integers (numpy name "
        "`carrier_numpy_name`) viewed as `numpy_dtype`.",
        pybind11::arg("dtype"), pybind11::arg("carrier"), pybind11::arg("numpy_dtype"),
        pybind11::arg("carrier_numpy_name"));
  m.def("host_arrays", &host_arrays,
        "Numpy arrays over the host data of neuron tensors (copies only where not dense); "
        "`orders[i]` permutes tensor i to the order it is laid out in.",
        pybind11::arg("tensors"), pybind11::arg("orders") = pybind11::none());
  m.def("device_tensors_from", &device_tensors_from,
        "New neuron tensors (sizes, strides, dtype per meta) holding numpy arrays' values.",
        pybind11::arg("arrays"), pybind11::arg("metas"), pybind11::arg("device"));
  pybind11::class_<OutputMetas>(m, "OutputMetas",
                                "A compiled op's new outputs (sizes, strides, dtype), for capture_launch.");
  m.def("output_metas", &make_output_metas, "OutputMetas from (sizes, strides, dtype) tuples.");
  pybind11::class_<HostViews>(m, "HostViews",
                              "A queued launch's captured host inputs and output aliases.")
      .def_property_readonly("inputs", [](const HostViews& v) { return v.inputs; })
      .def_property_readonly("outputs", [](const HostViews& v) { return v.outputs; })
      .def("arrays", [](const HostViews& v, const pybind11::object& orders) {
        return host_arrays(v.inputs, orders);
      }, "Numpy arrays over the inputs' bytes as they are now (permuted to `orders`).",
           pybind11::arg("orders") = pybind11::none())
      .def("write", [](const HostViews& v, const pybind11::sequence& arrays) {
        write_arrays(v.outputs, arrays);
      }, "Copy the program's results into the outputs, in order.");
  m.def("capture_launch", &capture_launch,
        "(fresh device tensors, HostViews) of an asynchronous launch.",
        pybind11::arg("inputs"), pybind11::arg("metas"), pybind11::arg("targets"),
        pybind11::arg("device"));
  m.def("write_arrays", &write_arrays,
        "Copy numpy arrays into host tensors (a launch's host outputs), in order.");
  m.def("set_sync_hook", [](pybind11::object hook) {
    Py_XDECREF(g_sync_hook);
    g_sync_hook = hook.is_none() ? nullptr : hook.release().ptr();
  }, "sync_hook(device, block) -> idle: called before every host access to device memory.");
  m.def("set_copy_hook", [](pybind11::object hook) {
    Py_XDECREF(g_copy_hook);
    g_copy_hook = hook.is_none() ? nullptr : hook.release().ptr();
  }, "copy_hook(src, dst, src_alias, dst_alias) -> queued: every copy between neuron tensors.");
  m.def("mark_execution_thread", []() { t_on_execution_thread = true; },
        "This thread runs queued ops: its host accesses never wait for the queue.");
  m.def("write_array", [](const at::Tensor& tensor, pybind11::handle array) {
    copy_array_into(host_alias(tensor, false), array);
  }, "Copy a numpy array (same shape and dtype) into a neuron tensor.");
}
