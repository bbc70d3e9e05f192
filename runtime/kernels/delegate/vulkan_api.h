#pragma once
// The subset of the Vulkan API (vulkan_core.h, 1.0) the Vulkan backend
// (vulkan_backend.cc) uses, declared here as volk-style loaders do: no
// Vulkan header is needed to build a runtime, and none links a Vulkan
// library (the backend loads libvulkan at run time through the PAL).
// Values and layouts are the specification's; only what the backend calls.

#include "runtime/core/compiler.h"

namespace pare {
namespace backends {
namespace vulkan {

using VkResult = int32_t;
using VkInstance = struct VkInstance_T*;
using VkPhysicalDevice = struct VkPhysicalDevice_T*;
using VkDevice = struct VkDevice_T*;
using VkQueue = struct VkQueue_T*;
using VkCommandBuffer = struct VkCommandBuffer_T*;
using VkHandle = uint64_t;  // every non-dispatchable handle on 64-bit targets
using VkVoidFunction = void (*)();

constexpr uint32_t kApiVersion10 = 1u << 22;
constexpr uint32_t kQueueCompute = 0x2;
constexpr uint32_t kCommandPoolResetCommandBuffer = 0x2;
constexpr uint32_t kBufferUsageStorage = 0x20;
constexpr uint32_t kMemoryHostVisible = 0x2, kMemoryHostCoherent = 0x4;
constexpr uint32_t kShaderStageCompute = 0x20;
constexpr uint32_t kDescriptorStorageBuffer = 7;
constexpr uint32_t kBindPointCompute = 1;
constexpr uint32_t kStageCompute = 0x800, kStageHost = 0x4000;
constexpr uint32_t kAccessShaderRead = 0x20, kAccessShaderWrite = 0x40, kAccessHostRead = 0x2000,
                   kAccessHostWrite = 0x4000;
constexpr uint64_t kWholeSize = ~uint64_t{0};

enum StructureType : uint32_t {
  kApplicationInfo = 0,
  kInstanceCreateInfo = 1,
  kDeviceQueueCreateInfo = 2,
  kDeviceCreateInfo = 3,
  kSubmitInfo = 4,
  kMemoryAllocateInfo = 5,
  kFenceCreateInfo = 8,
  kBufferCreateInfo = 12,
  kShaderModuleCreateInfo = 16,
  kPipelineShaderStageCreateInfo = 18,
  kComputePipelineCreateInfo = 29,
  kPipelineLayoutCreateInfo = 30,
  kDescriptorSetLayoutCreateInfo = 32,
  kDescriptorPoolCreateInfo = 33,
  kDescriptorSetAllocateInfo = 34,
  kWriteDescriptorSet = 35,
  kCommandPoolCreateInfo = 39,
  kCommandBufferAllocateInfo = 40,
  kCommandBufferBeginInfo = 42,
  kMemoryBarrier = 46,
};

struct VkApplicationInfo {
  uint32_t sType;
  const void* pNext;
  const char* pApplicationName;
  uint32_t applicationVersion;
  const char* pEngineName;
  uint32_t engineVersion;
  uint32_t apiVersion;
};
struct VkInstanceCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  const VkApplicationInfo* pApplicationInfo;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
};
struct VkQueueFamilyProperties {
  uint32_t queueFlags;
  uint32_t queueCount;
  uint32_t timestampValidBits;
  uint32_t minImageTransferGranularity[3];
};
struct VkMemoryType {
  uint32_t propertyFlags;
  uint32_t heapIndex;
};
struct VkMemoryHeap {
  uint64_t size;
  uint32_t flags;
};
struct VkPhysicalDeviceMemoryProperties {
  uint32_t memoryTypeCount;
  VkMemoryType memoryTypes[32];
  uint32_t memoryHeapCount;
  VkMemoryHeap memoryHeaps[16];
};
// VkPhysicalDeviceFeatures: 55 VkBool32, robustBufferAccess first.
struct VkPhysicalDeviceFeatures {
  uint32_t flags[55];
};
struct VkDeviceQueueCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t queueFamilyIndex;
  uint32_t queueCount;
  const float* pQueuePriorities;
};
struct VkDeviceCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t queueCreateInfoCount;
  const VkDeviceQueueCreateInfo* pQueueCreateInfos;
  uint32_t enabledLayerCount;
  const char* const* ppEnabledLayerNames;
  uint32_t enabledExtensionCount;
  const char* const* ppEnabledExtensionNames;
  const VkPhysicalDeviceFeatures* pEnabledFeatures;
};
struct VkBufferCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint64_t size;
  uint32_t usage;
  uint32_t sharingMode;
  uint32_t queueFamilyIndexCount;
  const uint32_t* pQueueFamilyIndices;
};
struct VkMemoryRequirements {
  uint64_t size;
  uint64_t alignment;
  uint32_t memoryTypeBits;
};
struct VkMemoryAllocateInfo {
  uint32_t sType;
  const void* pNext;
  uint64_t allocationSize;
  uint32_t memoryTypeIndex;
};
struct VkShaderModuleCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  size_t codeSize;
  const uint32_t* pCode;
};
struct VkDescriptorSetLayoutBinding {
  uint32_t binding;
  uint32_t descriptorType;
  uint32_t descriptorCount;
  uint32_t stageFlags;
  const void* pImmutableSamplers;
};
struct VkDescriptorSetLayoutCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t bindingCount;
  const VkDescriptorSetLayoutBinding* pBindings;
};
struct VkPushConstantRange {
  uint32_t stageFlags;
  uint32_t offset;
  uint32_t size;
};
struct VkPipelineLayoutCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t setLayoutCount;
  const VkHandle* pSetLayouts;
  uint32_t pushConstantRangeCount;
  const VkPushConstantRange* pPushConstantRanges;
};
struct VkPipelineShaderStageCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t stage;
  VkHandle module;
  const char* pName;
  const void* pSpecializationInfo;
};
struct VkComputePipelineCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  VkPipelineShaderStageCreateInfo stage;
  VkHandle layout;
  VkHandle basePipelineHandle;
  int32_t basePipelineIndex;
};
struct VkDescriptorPoolSize {
  uint32_t type;
  uint32_t descriptorCount;
};
struct VkDescriptorPoolCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t maxSets;
  uint32_t poolSizeCount;
  const VkDescriptorPoolSize* pPoolSizes;
};
struct VkDescriptorSetAllocateInfo {
  uint32_t sType;
  const void* pNext;
  VkHandle descriptorPool;
  uint32_t descriptorSetCount;
  const VkHandle* pSetLayouts;
};
struct VkDescriptorBufferInfo {
  VkHandle buffer;
  uint64_t offset;
  uint64_t range;
};
struct VkWriteDescriptorSet {
  uint32_t sType;
  const void* pNext;
  VkHandle dstSet;
  uint32_t dstBinding;
  uint32_t dstArrayElement;
  uint32_t descriptorCount;
  uint32_t descriptorType;
  const void* pImageInfo;
  const VkDescriptorBufferInfo* pBufferInfo;
  const void* pTexelBufferView;
};
struct VkCommandPoolCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  uint32_t queueFamilyIndex;
};
struct VkCommandBufferAllocateInfo {
  uint32_t sType;
  const void* pNext;
  VkHandle commandPool;
  uint32_t level;
  uint32_t commandBufferCount;
};
struct VkCommandBufferBeginInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
  const void* pInheritanceInfo;
};
struct VkMemoryBarrier {
  uint32_t sType;
  const void* pNext;
  uint32_t srcAccessMask;
  uint32_t dstAccessMask;
};
struct VkFenceCreateInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t flags;
};
struct VkSubmitInfo {
  uint32_t sType;
  const void* pNext;
  uint32_t waitSemaphoreCount;
  const VkHandle* pWaitSemaphores;
  const uint32_t* pWaitDstStageMask;
  uint32_t commandBufferCount;
  const VkCommandBuffer* pCommandBuffers;
  uint32_t signalSemaphoreCount;
  const VkHandle* pSignalSemaphores;
};

// The entry points, each loaded by name through vkGetInstanceProcAddr.
#define PARE_VULKAN_FUNCTIONS(X)                                                                                       \
  X(vkDestroyInstance, void, VkInstance, const void*)                                                                  \
  X(vkEnumeratePhysicalDevices, VkResult, VkInstance, uint32_t*, VkPhysicalDevice*)                                    \
  X(vkGetPhysicalDeviceQueueFamilyProperties, void, VkPhysicalDevice, uint32_t*, VkQueueFamilyProperties*)             \
  X(vkGetPhysicalDeviceMemoryProperties, void, VkPhysicalDevice, VkPhysicalDeviceMemoryProperties*)                    \
  X(vkGetPhysicalDeviceFeatures, void, VkPhysicalDevice, VkPhysicalDeviceFeatures*)                                    \
  X(vkCreateDevice, VkResult, VkPhysicalDevice, const VkDeviceCreateInfo*, const void*, VkDevice*)                     \
  X(vkDestroyDevice, void, VkDevice, const void*)                                                                      \
  X(vkGetDeviceQueue, void, VkDevice, uint32_t, uint32_t, VkQueue*)                                                    \
  X(vkCreateBuffer, VkResult, VkDevice, const VkBufferCreateInfo*, const void*, VkHandle*)                             \
  X(vkDestroyBuffer, void, VkDevice, VkHandle, const void*)                                                            \
  X(vkGetBufferMemoryRequirements, void, VkDevice, VkHandle, VkMemoryRequirements*)                                    \
  X(vkAllocateMemory, VkResult, VkDevice, const VkMemoryAllocateInfo*, const void*, VkHandle*)                         \
  X(vkFreeMemory, void, VkDevice, VkHandle, const void*)                                                               \
  X(vkBindBufferMemory, VkResult, VkDevice, VkHandle, VkHandle, uint64_t)                                              \
  X(vkMapMemory, VkResult, VkDevice, VkHandle, uint64_t, uint64_t, uint32_t, void**)                                   \
  X(vkCreateShaderModule, VkResult, VkDevice, const VkShaderModuleCreateInfo*, const void*, VkHandle*)                 \
  X(vkDestroyShaderModule, void, VkDevice, VkHandle, const void*)                                                      \
  X(vkCreateDescriptorSetLayout, VkResult, VkDevice, const VkDescriptorSetLayoutCreateInfo*, const void*, VkHandle*)   \
  X(vkDestroyDescriptorSetLayout, void, VkDevice, VkHandle, const void*)                                               \
  X(vkCreatePipelineLayout, VkResult, VkDevice, const VkPipelineLayoutCreateInfo*, const void*, VkHandle*)             \
  X(vkDestroyPipelineLayout, void, VkDevice, VkHandle, const void*)                                                    \
  X(vkCreateComputePipelines, VkResult, VkDevice, VkHandle, uint32_t, const VkComputePipelineCreateInfo*, const void*, \
    VkHandle*)                                                                                                         \
  X(vkDestroyPipeline, void, VkDevice, VkHandle, const void*)                                                          \
  X(vkCreateDescriptorPool, VkResult, VkDevice, const VkDescriptorPoolCreateInfo*, const void*, VkHandle*)             \
  X(vkDestroyDescriptorPool, void, VkDevice, VkHandle, const void*)                                                    \
  X(vkAllocateDescriptorSets, VkResult, VkDevice, const VkDescriptorSetAllocateInfo*, VkHandle*)                       \
  X(vkUpdateDescriptorSets, void, VkDevice, uint32_t, const VkWriteDescriptorSet*, uint32_t, const void*)              \
  X(vkCreateCommandPool, VkResult, VkDevice, const VkCommandPoolCreateInfo*, const void*, VkHandle*)                   \
  X(vkDestroyCommandPool, void, VkDevice, VkHandle, const void*)                                                       \
  X(vkAllocateCommandBuffers, VkResult, VkDevice, const VkCommandBufferAllocateInfo*, VkCommandBuffer*)                \
  X(vkBeginCommandBuffer, VkResult, VkCommandBuffer, const VkCommandBufferBeginInfo*)                                  \
  X(vkEndCommandBuffer, VkResult, VkCommandBuffer)                                                                     \
  X(vkCmdBindPipeline, void, VkCommandBuffer, uint32_t, VkHandle)                                                      \
  X(vkCmdBindDescriptorSets, void, VkCommandBuffer, uint32_t, VkHandle, uint32_t, uint32_t, const VkHandle*, uint32_t, \
    const uint32_t*)                                                                                                   \
  X(vkCmdPushConstants, void, VkCommandBuffer, VkHandle, uint32_t, uint32_t, uint32_t, const void*)                    \
  X(vkCmdDispatch, void, VkCommandBuffer, uint32_t, uint32_t, uint32_t)                                                \
  X(vkCmdPipelineBarrier, void, VkCommandBuffer, uint32_t, uint32_t, uint32_t, uint32_t, const VkMemoryBarrier*,       \
    uint32_t, const void*, uint32_t, const void*)                                                                      \
  X(vkCreateFence, VkResult, VkDevice, const VkFenceCreateInfo*, const void*, VkHandle*)                               \
  X(vkDestroyFence, void, VkDevice, VkHandle, const void*)                                                             \
  X(vkResetFences, VkResult, VkDevice, uint32_t, const VkHandle*)                                                      \
  X(vkWaitForFences, VkResult, VkDevice, uint32_t, const VkHandle*, uint32_t, uint64_t)                                \
  X(vkQueueSubmit, VkResult, VkQueue, uint32_t, const VkSubmitInfo*, VkHandle)

using PFN_vkGetInstanceProcAddr = VkVoidFunction (*)(VkInstance, const char*);
using PFN_vkCreateInstance = VkResult (*)(const VkInstanceCreateInfo*, const void*, VkInstance*);

struct Api {
#define PARE_VULKAN_POINTER(name, result, ...) result (*name)(__VA_ARGS__);
  PARE_VULKAN_FUNCTIONS(PARE_VULKAN_POINTER)
#undef PARE_VULKAN_POINTER
};

}  // namespace vulkan
}  // namespace backends
}  // namespace pare
