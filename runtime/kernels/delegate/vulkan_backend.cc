// The Vulkan compute backend (docs/delegates.md, "The Vulkan backend").
//
// Its AOT side (pare/vulkan.py) compiles a partition into GLSL compute
// shaders (SPIR-V, by glslc) and a list of dispatches over float32 buffers;
// this side loads libvulkan at run time through the PAL (no runtime links a
// Vulkan library), makes one storage buffer per tensor, one compute
// pipeline per shader and one descriptor set per dispatch, records the
// dispatches once into a command buffer, and per execute copies the inputs
// in, submits, waits on a fence and copies the outputs out. The Vulkan
// types and entry points it uses are declared in vulkan_api.h (as
// volk-style loaders do), so no Vulkan header is needed to build it.
//
// The blob (little-endian u32 fields; pare/vulkan.py writes it):
//
//   offset 0   u8[4]  magic "PVKB"
//          4   u32    version, 2
//          8   u32    blob size
//         12   u32    FNV-1a of bytes [16, blob size)
//         16   u32    num_shaders       <= kMaxShaders
//         20   u32    num_tensors       <= kMaxTensors
//         24   u32    num_dispatches    <= kMaxDispatches
//         28   u32    num_inputs, 32: u32 num_outputs
//         36   u32    weights offset, 40: u32 weights bytes
//         44   u32    code offset, 48: u32 code bytes
//         52   u32    num_symbols       <= kMaxSymbols
//         56   u32    num_terms         <= kMaxTerms
//         60   u32    0
//         64   num_shaders x {u32 code offset (in the code section), u32 code bytes,
//                             u32 bindings (1..kMaxBindings), u32 push-constant words (<= 32)}
//          .   num_symbols x {u32 input, u32 dim, u32 min, u32 max}: a dynamic size,
//                read from that dim of that input at execute, within [min, max]
//          .   num_tensors x {u32 kind, u32 index, u32 numel, u32 rank, u32 sizes[6]}
//                kind 0 input `index`, 1 output `index`, 2 weights at byte `index`
//                of the weights section, 3 an intermediate (index 0)
//          .   num_dispatches x {u32 shader, u32 threads, u32 0, u32 0, u32 bindings[8],
//                                u32 push[32]}
//                binding 0 is the tensor the shader writes (an intermediate or
//                an output); unused bindings and push words are 0; threads
//                invocations in groups of 64, over a grid at most 65535 wide
//          .   num_terms x {u32 word, u32 symbol, i32 coefficient}: the word (a
//                numel, size, threads or push word, counted in u32s from the
//                tensor table's start) plus coefficient x the symbol's value;
//                the tables hold each word's value with every symbol at 0
//          .   the weights section, then the code section (SPIR-V words)
//
// init checks every field against these bounds and against each other
// (each input and output exactly once, sizes multiply to numel, sections
// inside the blob, with the symbols at their minimums and at their
// maximums), so a corrupt blob fails there with InvalidProgram. A blob with
// symbols gets its buffers and command buffer at the first execute, and
// again when an execute brings other values (buffers only grow); while they
// repeat, it reuses them. The shaders' own reads stay inside their buffers
// with robustBufferAccess, which init enables where the device has it.

#include "runtime/kernels/delegate/delegate.h"
#include "runtime/kernels/delegate/vulkan_api.h"
#include "runtime/pal/pal.h"

namespace pare {
namespace backends {
namespace vulkan {

#if defined(__APPLE__)
// Apple platforms have no Vulkan (Metal would be a backend of its own): a
// manifest that names the backend fails codegen for ios_arm64
// (platforms/table.bzl's lacks_backends), so only a runtime selecting every
// operator (the full runtime) has it there, always unavailable: a method
// falls back to its CPU copy (--delegate-fallback) or fails naming the fix,
// and the runtime carries none of the code below. init, execute and destroy
// are never called when is_available is false.
namespace {
bool is_available(const char** reason) {
  *reason = "Apple platforms have no Vulkan";
  return false;
}
}  // namespace

constexpr Backend kBackend = {"vulkan", is_available, nullptr, nullptr, nullptr};
#else
namespace {

// --- the blob --------------------------------------------------------------

constexpr uint32_t kVersion = 2;
constexpr size_t kHeaderBytes = 64;
constexpr size_t kShaderBytes = 16;
constexpr size_t kSymbolBytes = 16;
constexpr uint32_t kMaxRank = 6;
constexpr uint32_t kTensorWords = 4 + kMaxRank;
constexpr uint32_t kMaxBindings = 8;
constexpr uint32_t kMaxPushWords = 32;
constexpr uint32_t kDispatchWords = 4 + kMaxBindings + kMaxPushWords;
constexpr size_t kTermBytes = 12;
constexpr uint32_t kMaxShaders = 64, kMaxTensors = 4096, kMaxDispatches = 4096, kMaxSymbols = 8, kMaxTerms = 65536;
// Vulkan's guaranteed minimums: maxComputeWorkGroupCount[*] and
// maxStorageBufferRange; the shaders' work group size.
constexpr uint32_t kMaxGroups = 65535;
constexpr uint32_t kMaxNumel = (1u << 27) / 4;
constexpr uint32_t kLocalSize = 64;
enum TensorKind : uint32_t { kInput = 0, kOutput = 1, kWeight = 2, kIntermediate = 3 };

struct TensorInfo {
  uint32_t kind, index, numel, rank;
  int64_t sizes[kMaxRank];
  uint32_t capacity;  // elements its buffer holds
  VkHandle buffer, memory;
  float* mapped;
};
struct Shader {
  VkHandle module, set_layout, layout, pipeline;
  uint32_t bindings, push_words;
};

// Everything init made, freed by destroy (also after a failed init).
struct Handle {
  void* library;
  Api api;
  VkInstance instance;
  VkPhysicalDevice physical;
  VkDevice device;
  VkQueue queue;
  VkHandle command_pool, descriptor_pool, fence;
  VkCommandBuffer commands;
  uint32_t num_shaders, num_tensors, num_dispatches, num_inputs, num_outputs, num_symbols, num_terms, num_words;
  VkPhysicalDeviceMemoryProperties memory_types;
  bool recorded;  // buffers and commands for `values`
  Shader* shaders;
  TensorInfo* tensors;
  VkHandle* sets;     // a descriptor set per dispatch
  uint32_t* inputs;   // tensor of each input
  uint32_t* outputs;  // tensor of each output
  uint32_t* symbols;  // num_symbols x {input, dim, min, max}
  uint32_t* terms;    // num_terms x {word, symbol, coefficient}
  uint32_t* base;     // the tensor and dispatch tables as in the blob
  uint32_t* words;    // the same, evaluated at `values`
  int64_t values[kMaxSymbols];
};

uint32_t rd32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) | (static_cast<uint32_t>(p[2]) << 16) |
         (static_cast<uint32_t>(p[3]) << 24);
}

uint32_t fnv1a(const uint8_t* p, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 16777619u;
  return h;
}

#if defined(__ANDROID__)
constexpr const char* kLibraryName = "libvulkan.so";
#else
constexpr const char* kLibraryName = "libvulkan.so.1";
#endif

// The loader, an instance and the first device with a compute queue;
// nullptr and a static reason when there are none. On success `h` owns them.
const char* open_device(Handle& h, uint32_t* queue_family) {
  h.library = pare_pal_library_open(kLibraryName);
  if (h.library == nullptr) return "no Vulkan loader (libvulkan) on this device";
  auto get = reinterpret_cast<PFN_vkGetInstanceProcAddr>(
      reinterpret_cast<uintptr_t>(pare_pal_library_symbol(h.library, "vkGetInstanceProcAddr")));
  if (get == nullptr) return "libvulkan has no vkGetInstanceProcAddr";
  auto create = reinterpret_cast<PFN_vkCreateInstance>(reinterpret_cast<uintptr_t>(get(nullptr, "vkCreateInstance")));
  if (create == nullptr) return "libvulkan has no vkCreateInstance";
  const VkApplicationInfo app{kApplicationInfo, nullptr, "pare", 1, "pare", 1, kApiVersion10};
  const VkInstanceCreateInfo info{kInstanceCreateInfo, nullptr, 0, &app, 0, nullptr, 0, nullptr};
  if (create(&info, nullptr, &h.instance) != 0) {
    h.instance = nullptr;
    return "no Vulkan driver (vkCreateInstance failed)";
  }
#define PARE_VULKAN_LOAD(name, ...)                                                                         \
  h.api.name = reinterpret_cast<decltype(h.api.name)>(reinterpret_cast<uintptr_t>(get(h.instance, #name))); \
  if (h.api.name == nullptr) return "the Vulkan driver lacks " #name;
  PARE_VULKAN_FUNCTIONS(PARE_VULKAN_LOAD)
#undef PARE_VULKAN_LOAD
  VkPhysicalDevice devices[8];
  uint32_t count = 8;
  const VkResult listed = h.api.vkEnumeratePhysicalDevices(h.instance, &count, devices);
  if ((listed != 0 && listed != 5 /* VK_INCOMPLETE */) || count == 0) return "no Vulkan device";
  for (uint32_t d = 0; d < count; ++d) {
    VkQueueFamilyProperties families[16];
    uint32_t num_families = 16;
    h.api.vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &num_families, families);
    for (uint32_t f = 0; f < num_families; ++f) {
      if ((families[f].queueFlags & kQueueCompute) == 0 || families[f].queueCount == 0) continue;
      VkPhysicalDeviceFeatures supported;
      __builtin_memset(&supported, 0, sizeof supported);
      h.api.vkGetPhysicalDeviceFeatures(devices[d], &supported);
      VkPhysicalDeviceFeatures enabled;
      __builtin_memset(&enabled, 0, sizeof enabled);
      enabled.flags[0] = supported.flags[0];  // robustBufferAccess
      const float priority = 1.0f;
      const VkDeviceQueueCreateInfo queue{kDeviceQueueCreateInfo, nullptr, 0, f, 1, &priority};
      const VkDeviceCreateInfo device{kDeviceCreateInfo, nullptr, 0, 1, &queue, 0, nullptr, 0, nullptr, &enabled};
      if (h.api.vkCreateDevice(devices[d], &device, nullptr, &h.device) != 0) {
        h.device = nullptr;
        return "the Vulkan device could not be opened (vkCreateDevice failed)";
      }
      h.api.vkGetDeviceQueue(h.device, f, 0, &h.queue);
      *queue_family = f;
      h.physical = devices[d];
      return nullptr;
    }
  }
  return "no Vulkan device with a compute queue";
}

void close_device(Handle& h) {
  // A driver that lacked an entry point left open_device with an instance
  // but perhaps without the functions that destroy it.
  if (h.device != nullptr && h.api.vkDestroyDevice != nullptr) h.api.vkDestroyDevice(h.device, nullptr);
  if (h.instance != nullptr && h.api.vkDestroyInstance != nullptr) h.api.vkDestroyInstance(h.instance, nullptr);
  if (h.library != nullptr) pare_pal_library_close(h.library);
  h.device = nullptr;
  h.instance = nullptr;
  h.library = nullptr;
}

// Only whether the Vulkan loader is there: init, which follows at once,
// opens the device, and its reasons (no driver, no device) fail method
// creation with BackendUnavailable just as these do, so a method's creation
// opens the device once.
bool is_available(const char** reason) {
  void* library = pare_pal_library_open(kLibraryName);
  *reason = library == nullptr ? "no Vulkan loader (libvulkan) on this device"
            : pare_pal_library_symbol(library, "vkGetInstanceProcAddr") == nullptr
                ? "libvulkan has no vkGetInstanceProcAddr"
                : nullptr;
  if (library != nullptr) pare_pal_library_close(library);
  return *reason == nullptr;
}

void free_buffer(Handle& h, TensorInfo& info) {
  if (info.buffer != 0) h.api.vkDestroyBuffer(h.device, info.buffer, nullptr);
  if (info.memory != 0) h.api.vkFreeMemory(h.device, info.memory, nullptr);  // unmaps it
  info.buffer = info.memory = 0;
  info.mapped = nullptr;
  info.capacity = 0;
}

void destroy(void* opaque) {
  Handle& h = *static_cast<Handle*>(opaque);
  if (h.device != nullptr) {
    const Api& vk = h.api;
    if (h.fence != 0) vk.vkDestroyFence(h.device, h.fence, nullptr);
    if (h.command_pool != 0) vk.vkDestroyCommandPool(h.device, h.command_pool, nullptr);
    if (h.descriptor_pool != 0) vk.vkDestroyDescriptorPool(h.device, h.descriptor_pool, nullptr);
    for (uint32_t s = 0; h.shaders != nullptr && s < h.num_shaders; ++s) {
      const Shader& shader = h.shaders[s];
      if (shader.pipeline != 0) vk.vkDestroyPipeline(h.device, shader.pipeline, nullptr);
      if (shader.layout != 0) vk.vkDestroyPipelineLayout(h.device, shader.layout, nullptr);
      if (shader.set_layout != 0) vk.vkDestroyDescriptorSetLayout(h.device, shader.set_layout, nullptr);
      if (shader.module != 0) vk.vkDestroyShaderModule(h.device, shader.module, nullptr);
    }
    for (uint32_t t = 0; h.tensors != nullptr && t < h.num_tensors; ++t) free_buffer(h, h.tensors[t]);
  }
  close_device(h);
  pare_pal_free(&h);
}

#define PARE_VK_CHECK(call, what)                                                                                   \
  do {                                                                                                              \
    const VkResult vk_result = (call);                                                                              \
    PARE_CHECK_OR_RETURN(ctx, vk_result == 0, Error::BackendUnavailable,                                            \
                         "backend 'vulkan': %s failed (VkResult %d); re-export the model with --delegate-fallback", \
                         what, static_cast<int>(vk_result));                                                        \
  } while (0)

#define PARE_BLOB_CHECK(cond, ...) \
  PARE_CHECK_OR_RETURN(ctx, cond, Error::InvalidProgram, "the vulkan backend's blob is corrupt (" __VA_ARGS__)

// Checks the blob's header and sections (no device needed).
Error check_blob(KernelContext& ctx, const BackendBlob& blob) {
  const uint8_t* p = blob.data;
  PARE_CHECK_OR_RETURN(ctx, blob.size >= kHeaderBytes && p[0] == 'P' && p[1] == 'V' && p[2] == 'K' && p[3] == 'B',
                       Error::InvalidProgram, "the vulkan backend's blob is corrupt (no PVKB header); re-export it");
  PARE_CHECK_OR_RETURN(ctx, rd32(p + 4) == kVersion, Error::InvalidProgram,
                       "the vulkan backend's blob has version %u; this runtime reads version %u: re-export it",
                       rd32(p + 4), kVersion);
  PARE_BLOB_CHECK(rd32(p + 8) == blob.size, "%zu bytes, its header says %u); re-export it", blob.size, rd32(p + 8));
  const uint32_t sum = fnv1a(p + 16, blob.size - 16);
  PARE_BLOB_CHECK(rd32(p + 12) == sum, "checksum %08x, its header says %08x); re-export it", sum, rd32(p + 12));
  const uint32_t num_shaders = rd32(p + 16), num_tensors = rd32(p + 20), num_dispatches = rd32(p + 24);
  const uint32_t num_inputs = rd32(p + 28), num_outputs = rd32(p + 32), num_symbols = rd32(p + 52);
  const uint32_t num_terms = rd32(p + 56);
  const uint64_t weights = rd32(p + 36), weights_bytes = rd32(p + 40), code = rd32(p + 44), code_bytes = rd32(p + 48);
  const uint64_t tables = kHeaderBytes + uint64_t{num_shaders} * kShaderBytes + uint64_t{num_symbols} * kSymbolBytes +
                          uint64_t{num_tensors} * kTensorWords * 4 + uint64_t{num_dispatches} * kDispatchWords * 4 +
                          uint64_t{num_terms} * kTermBytes;
  PARE_BLOB_CHECK(num_shaders >= 1 && num_shaders <= kMaxShaders && num_tensors <= kMaxTensors && num_dispatches >= 1 &&
                      num_dispatches <= kMaxDispatches && num_inputs <= num_tensors && num_outputs >= 1 &&
                      num_outputs <= num_tensors && num_symbols <= kMaxSymbols && num_terms <= kMaxTerms &&
                      rd32(p + 60) == 0,
                  "%u shaders, %u tensors, %u dispatches, %u inputs, %u outputs, %u symbols, %u terms); re-export it",
                  num_shaders, num_tensors, num_dispatches, num_inputs, num_outputs, num_symbols, num_terms);
  PARE_BLOB_CHECK(tables <= weights && weights + weights_bytes <= code && code + code_bytes == blob.size &&
                      weights % 4 == 0 && code % 4 == 0,
                  "sections at %llu, %llu and %llu of %zu bytes); re-export it",
                  static_cast<unsigned long long>(tables), static_cast<unsigned long long>(weights),
                  static_cast<unsigned long long>(code), blob.size);
  return Error::Ok;
}

// h.words: h.base with each term added for the symbols' `values`.
void evaluate(Handle& h, const int64_t* values) {
  __builtin_memcpy(h.words, h.base, uint64_t{h.num_words} * 4);
  for (uint32_t i = 0; i < h.num_terms; ++i) {
    const uint32_t* term = h.terms + 3 * i;
    h.words[term[0]] += static_cast<uint32_t>(static_cast<int64_t>(static_cast<int32_t>(term[2])) * values[term[1]]);
  }
}

// Checks what the symbols change in h.words (element counts, sizes,
// threads) and sets each tensor's numel and sizes from them.
Error check_sizes(KernelContext& ctx, Handle& h) {
  for (uint32_t t = 0; t < h.num_tensors; ++t) {
    const uint32_t* q = h.words + t * kTensorWords;
    TensorInfo& info = h.tensors[t];
    bool valid = q[2] >= 1 && q[2] <= kMaxNumel && (info.kind != kWeight || q[2] == info.numel);
    uint64_t numel = 1;
    for (uint32_t d = 0; d < kMaxRank; ++d) {
      valid = valid && (d < info.rank || q[4 + d] == 0);
      if (d < info.rank) numel = numel * q[4 + d] > kMaxNumel ? uint64_t{kMaxNumel} + 1 : numel * q[4 + d];
      info.sizes[d] = q[4 + d];
    }
    PARE_BLOB_CHECK(valid && numel == q[2], "tensor %u: kind %u, index %u, %u elements, rank %u); re-export it", t,
                    info.kind, info.index, q[2], info.rank);
    info.numel = q[2];
  }
  for (uint32_t k = 0; k < h.num_dispatches; ++k) {
    const uint32_t* q = h.words + h.num_tensors * kTensorWords + k * kDispatchWords;
    // Any u32 of threads fits a grid of 65535 x 65535 groups of 64.
    bool valid = q[1] >= 1;
    for (uint32_t w = h.shaders[q[0]].push_words; valid && w < kMaxPushWords; ++w) valid = q[4 + kMaxBindings + w] == 0;
    PARE_BLOB_CHECK(valid, "dispatch %u: shader %u, %u threads, binding 0 tensor %u); re-export it", k, q[0], q[1],
                    q[4]);
  }
  return Error::Ok;
}

// Gives `info` a host-visible, coherent buffer of its numel (keeping one
// that is large enough).
Error make_buffer(KernelContext& ctx, Handle& h, TensorInfo& info) {
  if (info.capacity >= info.numel) return Error::Ok;
  free_buffer(h, info);
  const Api& vk = h.api;
  const VkBufferCreateInfo buffer{kBufferCreateInfo,   nullptr, 0, uint64_t{info.numel} * 4,
                                  kBufferUsageStorage, 0,       0, nullptr};
  PARE_VK_CHECK(vk.vkCreateBuffer(h.device, &buffer, nullptr, &info.buffer), "vkCreateBuffer");
  VkMemoryRequirements needs{0, 0, 0};
  vk.vkGetBufferMemoryRequirements(h.device, info.buffer, &needs);
  const uint32_t wanted = kMemoryHostVisible | kMemoryHostCoherent;
  uint32_t type = 32;
  for (uint32_t m = 0; type == 32 && m < h.memory_types.memoryTypeCount && m < 32; ++m) {
    if ((needs.memoryTypeBits >> m & 1) != 0 && (h.memory_types.memoryTypes[m].propertyFlags & wanted) == wanted) {
      type = m;
    }
  }
  PARE_CHECK_OR_RETURN(ctx, type < 32, Error::BackendUnavailable,
                       "backend 'vulkan': the device has no host-visible coherent memory for its buffers; re-export "
                       "the model with --delegate-fallback");
  const VkMemoryAllocateInfo allocation{kMemoryAllocateInfo, nullptr, needs.size, type};
  PARE_VK_CHECK(vk.vkAllocateMemory(h.device, &allocation, nullptr, &info.memory), "vkAllocateMemory");
  PARE_VK_CHECK(vk.vkBindBufferMemory(h.device, info.buffer, info.memory, 0), "vkBindBufferMemory");
  void* mapped = nullptr;
  PARE_VK_CHECK(vk.vkMapMemory(h.device, info.memory, 0, kWholeSize, 0, &mapped), "vkMapMemory");
  info.mapped = static_cast<float*>(mapped);
  info.capacity = info.numel;
  return Error::Ok;
}

// The buffers, descriptor sets and command buffer for the symbols' `values`
// (h.words evaluated at them and checked).
Error record(KernelContext& ctx, Handle& h, const int64_t* values) {
  h.recorded = false;
  evaluate(h, values);
  PARE_TRY(check_sizes(ctx, h));
  for (uint32_t t = 0; t < h.num_tensors; ++t) PARE_TRY(make_buffer(ctx, h, h.tensors[t]));
  const Api& vk = h.api;
  const VkCommandBufferBeginInfo begin{kCommandBufferBeginInfo, nullptr, 0, nullptr};
  PARE_VK_CHECK(vk.vkBeginCommandBuffer(h.commands, &begin), "vkBeginCommandBuffer");
  const VkMemoryBarrier host_to_shader{kMemoryBarrier, nullptr, kAccessHostWrite, kAccessShaderRead};
  vk.vkCmdPipelineBarrier(h.commands, kStageHost, kStageCompute, 0, 1, &host_to_shader, 0, nullptr, 0, nullptr);
  for (uint32_t k = 0; k < h.num_dispatches; ++k) {
    const uint32_t* q = h.words + h.num_tensors * kTensorWords + k * kDispatchWords;
    const Shader& shader = h.shaders[q[0]];
    VkDescriptorBufferInfo buffers[kMaxBindings];
    VkWriteDescriptorSet writes[kMaxBindings];
    for (uint32_t b = 0; b < shader.bindings; ++b) {
      buffers[b] = {h.tensors[q[4 + b]].buffer, 0, kWholeSize};
      writes[b] = {kWriteDescriptorSet,      nullptr, h.sets[k],   b,      0, 1,
                   kDescriptorStorageBuffer, nullptr, &buffers[b], nullptr};
    }
    vk.vkUpdateDescriptorSets(h.device, shader.bindings, writes, 0, nullptr);
    const uint32_t blocks = q[1] / kLocalSize + (q[1] % kLocalSize != 0);
    const uint32_t x = blocks < kMaxGroups ? blocks : kMaxGroups;
    vk.vkCmdBindPipeline(h.commands, kBindPointCompute, shader.pipeline);
    vk.vkCmdBindDescriptorSets(h.commands, kBindPointCompute, shader.layout, 0, 1, &h.sets[k], 0, nullptr);
    vk.vkCmdPushConstants(h.commands, shader.layout, kShaderStageCompute, 0, 4 * kMaxPushWords, q + 4 + kMaxBindings);
    vk.vkCmdDispatch(h.commands, x, blocks / x + (blocks % x != 0), 1);
    const VkMemoryBarrier between{kMemoryBarrier, nullptr, kAccessShaderWrite, kAccessShaderRead | kAccessShaderWrite};
    vk.vkCmdPipelineBarrier(h.commands, kStageCompute, kStageCompute, 0, 1, &between, 0, nullptr, 0, nullptr);
  }
  const VkMemoryBarrier shader_to_host{kMemoryBarrier, nullptr, kAccessShaderWrite, kAccessHostRead};
  vk.vkCmdPipelineBarrier(h.commands, kStageCompute, kStageHost, 0, 1, &shader_to_host, 0, nullptr, 0, nullptr);
  PARE_VK_CHECK(vk.vkEndCommandBuffer(h.commands), "vkEndCommandBuffer");
  for (uint32_t i = 0; i < h.num_symbols; ++i) h.values[i] = values[i];
  h.recorded = true;
  return Error::Ok;
}

Error init(KernelContext& ctx, const BackendBlob& blob, void** out) {
  PARE_TRY(check_blob(ctx, blob));
  const uint8_t* p = blob.data;
  const uint32_t num_shaders = rd32(p + 16), num_tensors = rd32(p + 20), num_dispatches = rd32(p + 24);
  const uint32_t num_inputs = rd32(p + 28), num_outputs = rd32(p + 32), num_symbols = rd32(p + 52);
  const uint32_t num_terms = rd32(p + 56);
  const uint8_t* weights = p + rd32(p + 36);
  const uint32_t weights_bytes = rd32(p + 40);
  const uint8_t* code = p + rd32(p + 44);
  const uint32_t code_bytes = rd32(p + 48);
  const uint8_t* shader_table = p + kHeaderBytes;
  const uint8_t* symbol_table = shader_table + num_shaders * kShaderBytes;
  const uint8_t* word_table = symbol_table + num_symbols * kSymbolBytes;  // tensors, then dispatches
  const uint32_t num_words = num_tensors * kTensorWords + num_dispatches * kDispatchWords;
  const uint8_t* term_table = word_table + uint64_t{num_words} * 4;

  // One block for the handle and its arrays, freed by destroy.
  const size_t bytes = sizeof(Handle) + num_shaders * sizeof(Shader) + num_tensors * sizeof(TensorInfo) +
                       num_dispatches * sizeof(VkHandle) +
                       (num_inputs + num_outputs + 4 * num_symbols + 3 * num_terms + 2 * size_t{num_words}) * 4;
  void* memory = pare_pal_malloc(bytes, alignof(Handle));
  PARE_CHECK_OR_RETURN(ctx, memory != nullptr, Error::OutOfMemory, "out of memory for the vulkan backend (%zu bytes)",
                       bytes);
  __builtin_memset(memory, 0, bytes);
  Handle& h = *static_cast<Handle*>(memory);
  *out = &h;  // from here on, the Delegate's destroy frees what exists
  h.shaders = reinterpret_cast<Shader*>(&h + 1);
  h.tensors = reinterpret_cast<TensorInfo*>(h.shaders + num_shaders);
  h.sets = reinterpret_cast<VkHandle*>(h.tensors + num_tensors);
  h.inputs = reinterpret_cast<uint32_t*>(h.sets + num_dispatches);
  h.outputs = h.inputs + num_inputs;
  h.symbols = h.outputs + num_outputs;
  h.terms = h.symbols + 4 * num_symbols;
  h.base = h.terms + 3 * num_terms;
  h.words = h.base + num_words;
  h.num_shaders = num_shaders;
  h.num_tensors = num_tensors;
  h.num_inputs = num_inputs;
  h.num_outputs = num_outputs;
  h.num_dispatches = num_dispatches;
  h.num_symbols = num_symbols;
  h.num_terms = num_terms;
  h.num_words = num_words;
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) h.inputs[i] = kMaxTensors;
  for (uint32_t w = 0; w < num_words; ++w) h.base[w] = rd32(word_table + 4 * w);

  for (uint32_t s = 0; s < num_shaders; ++s) {
    const uint8_t* q = shader_table + s * kShaderBytes;
    const uint64_t at = rd32(q), size = rd32(q + 4);
    Shader& shader = h.shaders[s];
    shader.bindings = rd32(q + 8);
    shader.push_words = rd32(q + 12);
    PARE_BLOB_CHECK(
        at % 4 == 0 && size % 4 == 0 && size >= 20 && at + size <= code_bytes && rd32(code + at) == 0x07230203u &&
            shader.bindings >= 1 && shader.bindings <= kMaxBindings && shader.push_words <= kMaxPushWords,
        "shader %u: %llu bytes at %llu, %u bindings, %u push words); re-export it", s,
        static_cast<unsigned long long>(size), static_cast<unsigned long long>(at), shader.bindings, shader.push_words);
  }
  // What the symbols do not change: kinds, ranks, inputs and outputs,
  // weights, shaders and bindings.
  for (uint32_t t = 0; t < num_tensors; ++t) {
    const uint32_t* q = h.base + t * kTensorWords;
    TensorInfo& info = h.tensors[t];
    info.kind = q[0];
    info.index = q[1];
    info.numel = q[2];
    info.rank = q[3];
    bool valid = info.kind <= kIntermediate && info.rank <= kMaxRank;
    if (valid && info.kind == kInput) {
      valid = info.index < num_inputs && h.inputs[info.index] == kMaxTensors;
      if (valid) h.inputs[info.index] = t;
    } else if (valid && info.kind == kOutput) {
      valid = info.index < num_outputs && h.outputs[info.index] == kMaxTensors;
      if (valid) h.outputs[info.index] = t;
    } else if (valid && info.kind == kWeight) {
      valid = info.index % 4 == 0 && uint64_t{info.index} + uint64_t{info.numel} * 4 <= weights_bytes;
    } else {
      valid = valid && info.index == 0;
    }
    PARE_BLOB_CHECK(valid, "tensor %u: kind %u, index %u, %u elements, rank %u); re-export it", t, info.kind,
                    info.index, info.numel, info.rank);
  }
  for (uint32_t i = 0; i < num_inputs + num_outputs; ++i) {
    PARE_BLOB_CHECK(h.inputs[i] < num_tensors, "%s %u has no tensor); re-export it",
                    i < num_inputs ? "input" : "output", i < num_inputs ? i : i - num_inputs);
  }
  uint32_t descriptors = 0;
  for (uint32_t k = 0; k < num_dispatches; ++k) {
    const uint32_t* q = h.base + num_tensors * kTensorWords + k * kDispatchWords;
    bool valid = q[0] < num_shaders && q[2] == 0 && q[3] == 0;
    for (uint32_t b = 0; valid && b < kMaxBindings; ++b) {
      const uint32_t t = q[4 + b];
      valid = b < h.shaders[q[0]].bindings ? t < num_tensors : t == 0;
      // Binding 0 is written: never an input or the weights.
      if (valid && b == 0) valid = h.tensors[t].kind == kOutput || h.tensors[t].kind == kIntermediate;
    }
    PARE_BLOB_CHECK(valid, "dispatch %u: shader %u, %u threads, binding 0 tensor %u); re-export it", k, q[0], q[1],
                    q[4]);
    descriptors += h.shaders[q[0]].bindings;
  }
  // The symbols, and the terms, which change only element counts, sizes,
  // threads and push words, never a weight's.
  int64_t lows[kMaxSymbols], highs[kMaxSymbols];
  for (uint32_t i = 0; i < num_symbols; ++i) {
    const uint8_t* q = symbol_table + i * kSymbolBytes;
    for (uint32_t f = 0; f < 4; ++f) h.symbols[4 * i + f] = rd32(q + 4 * f);
    const uint32_t* symbol = h.symbols + 4 * i;
    lows[i] = symbol[2];
    highs[i] = symbol[3];
    PARE_BLOB_CHECK(symbol[0] < num_inputs && symbol[1] < h.tensors[h.inputs[symbol[0]]].rank && symbol[2] >= 1 &&
                        symbol[2] <= symbol[3] && symbol[3] <= kMaxNumel,
                    "symbol %u: input %u dim %u, from %u to %u); re-export it", i, symbol[0], symbol[1], symbol[2],
                    symbol[3]);
  }
  for (uint32_t i = 0; i < num_terms; ++i) {
    uint32_t* term = h.terms + 3 * i;
    for (uint32_t f = 0; f < 3; ++f) term[f] = rd32(term_table + kTermBytes * i + 4 * f);
    const uint32_t w = term[0], tensor_words = num_tensors * kTensorWords;
    const uint32_t field = w < tensor_words ? w % kTensorWords : (w - tensor_words) % kDispatchWords;
    const bool valid = term[1] < num_symbols && w < num_words &&
                       (w < tensor_words ? (field == 2 || field >= 4) && h.tensors[w / kTensorWords].kind != kWeight
                                         : field == 1 || field >= 4 + kMaxBindings);
    PARE_BLOB_CHECK(valid, "term %u: word %u, symbol %u); re-export it", i, w, term[1]);
  }
  // The sizes with the symbols at their bounds (affine in them, so within
  // the bounds too: execute checks them again at each new shape).
  evaluate(h, lows);
  PARE_TRY(check_sizes(ctx, h));
  evaluate(h, highs);
  PARE_TRY(check_sizes(ctx, h));

  // The device.
  uint32_t family = 0;
  const char* reason = open_device(h, &family);
  PARE_CHECK_OR_RETURN(ctx, reason == nullptr, Error::BackendUnavailable,
                       "backend 'vulkan' is not available on this device (%s): install its driver, or re-export the "
                       "model with --delegate-fallback (or without --delegate vulkan)",
                       reason);
  const Api& vk = h.api;
  vk.vkGetPhysicalDeviceMemoryProperties(h.physical, &h.memory_types);

  // The weights, copied in once.
  for (uint32_t t = 0; t < num_tensors; ++t) {
    TensorInfo& info = h.tensors[t];
    if (info.kind != kWeight) continue;
    PARE_TRY(make_buffer(ctx, h, info));
    __builtin_memcpy(info.mapped, weights + info.index, uint64_t{info.numel} * 4);
  }

  // A pipeline per shader: its bindings are storage buffers 0..n-1, its
  // push constants at most 128 bytes (Vulkan's guaranteed minimum).
  for (uint32_t s = 0; s < num_shaders; ++s) {
    Shader& shader = h.shaders[s];
    const uint8_t* q = shader_table + s * kShaderBytes;
    // The SPIR-V words, copied to 4-byte-aligned memory.
    PARE_TRY_ASSIGN(void* words, ctx.allocate_scratch(rd32(q + 4)));
    __builtin_memcpy(words, code + rd32(q), rd32(q + 4));
    const VkShaderModuleCreateInfo module{kShaderModuleCreateInfo, nullptr, 0, rd32(q + 4),
                                          static_cast<const uint32_t*>(words)};
    PARE_VK_CHECK(vk.vkCreateShaderModule(h.device, &module, nullptr, &shader.module), "vkCreateShaderModule");
    VkDescriptorSetLayoutBinding bindings[kMaxBindings];
    for (uint32_t b = 0; b < shader.bindings; ++b) {
      bindings[b] = {b, kDescriptorStorageBuffer, 1, kShaderStageCompute, nullptr};
    }
    const VkDescriptorSetLayoutCreateInfo set{kDescriptorSetLayoutCreateInfo, nullptr, 0, shader.bindings, bindings};
    PARE_VK_CHECK(vk.vkCreateDescriptorSetLayout(h.device, &set, nullptr, &shader.set_layout),
                  "vkCreateDescriptorSetLayout");
    const VkPushConstantRange push{kShaderStageCompute, 0, 4 * kMaxPushWords};
    const VkPipelineLayoutCreateInfo layout{kPipelineLayoutCreateInfo, nullptr, 0, 1, &shader.set_layout, 1, &push};
    PARE_VK_CHECK(vk.vkCreatePipelineLayout(h.device, &layout, nullptr, &shader.layout), "vkCreatePipelineLayout");
    const VkComputePipelineCreateInfo pipeline{
        kComputePipelineCreateInfo,
        nullptr,
        0,
        {kPipelineShaderStageCreateInfo, nullptr, 0, kShaderStageCompute, shader.module, "main", nullptr},
        shader.layout,
        0,
        -1};
    PARE_VK_CHECK(vk.vkCreateComputePipelines(h.device, 0, 1, &pipeline, nullptr, &shader.pipeline),
                  "vkCreateComputePipelines");
  }

  // A descriptor set per dispatch, and one command buffer, which a new
  // shape re-records (its pool lets vkBeginCommandBuffer reset it).
  const VkDescriptorPoolSize pool_size{kDescriptorStorageBuffer, descriptors};
  const VkDescriptorPoolCreateInfo pool{kDescriptorPoolCreateInfo, nullptr, 0, num_dispatches, 1, &pool_size};
  PARE_VK_CHECK(vk.vkCreateDescriptorPool(h.device, &pool, nullptr, &h.descriptor_pool), "vkCreateDescriptorPool");
  for (uint32_t k = 0; k < num_dispatches; ++k) {
    const Shader& shader = h.shaders[h.base[num_tensors * kTensorWords + k * kDispatchWords]];
    const VkDescriptorSetAllocateInfo allocate{kDescriptorSetAllocateInfo, nullptr, h.descriptor_pool, 1,
                                               &shader.set_layout};
    PARE_VK_CHECK(vk.vkAllocateDescriptorSets(h.device, &allocate, &h.sets[k]), "vkAllocateDescriptorSets");
  }
  const VkCommandPoolCreateInfo command_pool{kCommandPoolCreateInfo, nullptr, kCommandPoolResetCommandBuffer, family};
  PARE_VK_CHECK(vk.vkCreateCommandPool(h.device, &command_pool, nullptr, &h.command_pool), "vkCreateCommandPool");
  const VkCommandBufferAllocateInfo command{kCommandBufferAllocateInfo, nullptr, h.command_pool, 0, 1};
  PARE_VK_CHECK(vk.vkAllocateCommandBuffers(h.device, &command, &h.commands), "vkAllocateCommandBuffers");
  const VkFenceCreateInfo fence{kFenceCreateInfo, nullptr, 0};
  PARE_VK_CHECK(vk.vkCreateFence(h.device, &fence, nullptr, &h.fence), "vkCreateFence");
  // Static shapes: recorded now, once.
  return num_symbols == 0 ? record(ctx, h, nullptr) : Error::Ok;
}

Error execute(KernelContext& ctx, void* opaque, TensorList inputs, TensorList outputs) {
  Handle& h = *static_cast<Handle*>(opaque);
  PARE_CHECK_OR_RETURN(ctx, inputs.size == h.num_inputs && outputs.size == h.num_outputs, Error::InvalidArgument,
                       "the vulkan backend's part takes %u inputs and %u outputs, got %zu and %zu", h.num_inputs,
                       h.num_outputs, inputs.size, outputs.size);
  // The symbols' values, read from the inputs' sizes; a new shape re-records.
  int64_t values[kMaxSymbols];
  bool same = h.recorded;
  for (uint32_t i = 0; i < h.num_symbols; ++i) {
    const uint32_t* symbol = h.symbols + 4 * i;
    const Value& v = *inputs.items[symbol[0]];
    PARE_CHECK_OR_RETURN(ctx, v.is_tensor() && v.tensor.dim == h.tensors[h.inputs[symbol[0]]].rank,
                         Error::InvalidArgument,
                         "the vulkan backend's input %u must be a tensor of %u dims, as exported", symbol[0],
                         h.tensors[h.inputs[symbol[0]]].rank);
    values[i] = v.tensor.sizes[symbol[1]];
    PARE_CHECK_OR_RETURN(ctx, values[i] >= symbol[2] && values[i] <= symbol[3], Error::InvalidArgument,
                         "the vulkan backend's input %u has size %lld in dim %u, outside the %u..%u its part was "
                         "exported for (larger sizes exceed a Vulkan storage buffer); run it on the CPU",
                         symbol[0], static_cast<long long>(values[i]), symbol[1], symbol[2], symbol[3]);
    same = same && values[i] == h.values[i];
  }
  if (!same) PARE_TRY(record(ctx, h, values));
  for (uint32_t i = 0; i < h.num_inputs; ++i) {
    const TensorInfo& info = h.tensors[h.inputs[i]];
    const Value& v = *inputs.items[i];
    const bool fits = v.is_tensor() && v.tensor.dtype == ScalarType::Float && v.tensor.numel() == info.numel;
    PARE_CHECK_OR_RETURN(ctx, fits, Error::InvalidArgument,
                         "the vulkan backend's input %u must be a Float tensor of %u elements, as exported, got %s %s",
                         i, info.numel, v.is_tensor() ? to_string(v.tensor.dtype) : "a non-tensor",
                         v.is_tensor() ? sizes_to_string(v.tensor.size_span()).text : "");
    if (v.tensor.is_contiguous()) {
      __builtin_memcpy(info.mapped, v.tensor.data_as<float>(), uint64_t{info.numel} * 4);
    } else {
      copy_to_contiguous(v.tensor, info.mapped);  // a CPU op's strided view
    }
  }
  const Api& vk = h.api;
  PARE_VK_CHECK(vk.vkResetFences(h.device, 1, &h.fence), "vkResetFences");
  const VkSubmitInfo submit{kSubmitInfo, nullptr, 0, nullptr, nullptr, 1, &h.commands, 0, nullptr};
  PARE_VK_CHECK(vk.vkQueueSubmit(h.queue, 1, &submit, h.fence), "vkQueueSubmit");
  PARE_VK_CHECK(vk.vkWaitForFences(h.device, 1, &h.fence, 1, ~uint64_t{0}), "vkWaitForFences");
  for (uint32_t o = 0; o < h.num_outputs; ++o) {
    const TensorInfo& info = h.tensors[h.outputs[o]];
    PARE_TRY_ASSIGN(Tensor * t,
                    ctx.allocate_output(*outputs.items[o], ScalarType::Float, IntArrayRef(info.sizes, info.rank)));
    __builtin_memcpy(t->data_as<float>(), info.mapped, uint64_t{info.numel} * 4);
  }
  return Error::Ok;
}

}  // namespace

constexpr Backend kBackend = {"vulkan", is_available, init, execute, destroy};
#endif

}  // namespace vulkan
}  // namespace backends

// pare::delegate_init.vulkan(Tensor blob, str key0, str value0, ...) -> Delegate
Error kernels::pare_delegate_init_vulkan(KernelContext& ctx, ValueSpan inputs, ValueSpan outputs) {
  return delegate_init(ctx, backends::vulkan::kBackend, inputs, outputs);
}

}  // namespace pare
