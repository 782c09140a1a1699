// SPDX-License-Identifier: Apache-2.0
// Device-side resources of a communicator: the state page (error report, abort flag; pinned and
// mapped so the host reads it while kernels run), the rank tables and the barrier signals.
#pragma once

#include <map>
#include <string>

#include "common/status.hpp"
#include "gicl/device_abi.h"

struct gicl_comm;
struct gicl_team;

namespace gicl {

struct DeviceResources {
  gicl_device_state_t* state_host = nullptr;  // cudaHostAlloc(mapped)
  gicl_device_state_t* state_dev = nullptr;   // its device address
  void* tables = nullptr;                     // device: error lock, slots, paths, sync_expected
  uint64_t* sync_in = nullptr;                // symmetric, allocated on first get_device_comm
  std::map<const gicl_team*, int32_t*> team_members;  // device copies of team member lists
  gicl_device_comm_t handle{};
};

/// Creates the local part (no collective step) for a communicator with a VMM heap.
Status device_resources_create(gicl_comm* comm);
/// Collective: allocates the barrier signals if not done yet and returns the handle.
Status device_comm_handle(gicl_comm* comm, gicl_device_comm_t* out);
/// Device member list of a team.
Status device_team(gicl_comm* comm, gicl_team* team, gicl_device_team_t* out);
/// Tells kernels to stop waiting (abort).
void device_resources_signal_abort(gicl_comm* comm);
/// Frees everything; `device_idle` false means kernels may still run: the memory is leaked on
/// purpose rather than freed under them.
void device_resources_free(gicl_comm* comm, bool device_idle);
/// The device error report as text, if a kernel recorded one.
bool device_error_text(const gicl_comm* comm, gicl_result_t* code, std::string* text);
/// Keeps the state page's view of the mapped heap size current (after growth).
void device_resources_note_heap(gicl_comm* comm);

}  // namespace gicl
