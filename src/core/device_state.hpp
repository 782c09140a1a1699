// Device-side resources of a communicator: the state page (error report, abort flag; pinned and
// mapped so the host reads it while kernels run), the rank tables and the barrier signals.
#pragma once

#include <map>
#include <string>

#include "ccl/device_abi.h"
#include "common/status.hpp"

struct ccl_comm;
struct ccl_team;

namespace ccl {

struct DeviceResources {
  ccl_device_state_t* state_host = nullptr;  // cudaHostAlloc(mapped)
  ccl_device_state_t* state_dev = nullptr;   // its device address
  void* tables = nullptr;                    // device: error lock, slots, paths, sync_expected
  uint64_t* sync_in = nullptr;               // symmetric, allocated on first get_device_comm
  std::map<const ccl_team*, int32_t*> team_members;  // device copies of team member lists
  ccl_device_comm_t handle{};
};

/// Creates the local part (no collective step) for a communicator with a VMM heap.
Status device_resources_create(ccl_comm* comm);
/// Collective: allocates the barrier signals if not done yet and returns the handle.
Status device_comm_handle(ccl_comm* comm, ccl_device_comm_t* out);
/// Device member list of a team.
Status device_team(ccl_comm* comm, ccl_team* team, ccl_device_team_t* out);
/// Tells kernels to stop waiting (abort).
void device_resources_signal_abort(ccl_comm* comm);
/// Frees everything; `device_idle` false means kernels may still run: the memory is leaked on
/// purpose rather than freed under them.
void device_resources_free(ccl_comm* comm, bool device_idle);
/// The device error report as text, if a kernel recorded one.
bool device_error_text(const ccl_comm* comm, ccl_result_t* code, std::string* text);
/// Keeps the state page's view of the mapped heap size current (after growth).
void device_resources_note_heap(ccl_comm* comm);

}  // namespace ccl
