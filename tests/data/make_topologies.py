#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the synthetic hwloc XML machines the topology tests load (run it to regenerate).

Each machine: packages with one NUMA node and a few cores each, and under every package a PCI
host bridge holding NVIDIA GPUs (class 0302) and NICs (InfiniBand class 0207 or Ethernet 0200),
either directly or behind PCIe switches (`switches`: per package, a list of (GPUs, NICs) under
each switch, as on HGX boards where each GPU shares a switch with its NICs); `nics_per_pkg` may
list a count per package.
"""
import itertools

def machine(name, packages, cores, gpus_per_pkg=0, nics_per_pkg=0, nic_class="0207",
            switches=None):
    gp = itertools.count(1)
    ncpu = packages * cores
    def mask(bits):
        v = 0
        for b in bits:
            v |= 1 << b
        return "0x%08x" % v
    allcpu, allnode = mask(range(ncpu)), mask(range(packages))
    out = ['<?xml version="1.0" encoding="UTF-8"?>', '<!DOCTYPE topology SYSTEM "hwloc2.dtd">',
           '<topology version="2.0">',
           f'  <object type="Machine" os_index="0" cpuset="{allcpu}" complete_cpuset="{allcpu}" '
           f'allowed_cpuset="{allcpu}" nodeset="{allnode}" complete_nodeset="{allnode}" '
           f'allowed_nodeset="{allnode}" gp_index="{next(gp)}">']
    gpu, nic, bus = 0, 0, 0x10
    for p in range(packages):
        cpus = mask(range(p * cores, (p + 1) * cores))
        node = mask([p])
        sets = f'cpuset="{cpus}" complete_cpuset="{cpus}" nodeset="{node}" complete_nodeset="{node}"'
        out.append(f'    <object type="Package" os_index="{p}" {sets} gp_index="{next(gp)}">')
        out.append(f'      <object type="NUMANode" os_index="{p}" {sets} gp_index="{next(gp)}" local_memory="68719476736"/>')
        for c in range(p * cores, (p + 1) * cores):
            one = mask([c])
            cs = f'cpuset="{one}" complete_cpuset="{one}" nodeset="{node}" complete_nodeset="{node}"'
            out.append(f'      <object type="Core" os_index="{c}" {cs} gp_index="{next(gp)}">')
            out.append(f'        <object type="PU" os_index="{c}" {cs} gp_index="{next(gp)}"/>')
            out.append('      </object>')
        def gpu_dev():
            nonlocal gpu, bus
            d = (bus, "0302 [10de:2335] [10de:18be] a1", [("cuda%d" % gpu, 5, "CUDA")])
            gpu += 1
            bus += 1
            return d

        def nic_dev():
            nonlocal nic, bus
            osdevs = [("mlx5_%d" % nic, 3, None), ("ib%d" % nic, 2, None)] if nic_class == "0207" \
                else [("eth%d" % nic, 2, None)]
            vendor = "15b3:101b" if nic_class == "0207" else "8086:1592"
            d = (bus, f"{nic_class} [{vendor}] [{vendor}] 00", osdevs)
            nic += 1
            bus += 1
            return d

        def emit(devs, indent):
            for b, ptype, osdevs in devs:
                out.append(f'{indent}<object type="PCIDev" gp_index="{next(gp)}" pci_busid="0000:{b:02x}:00.0" '
                           f'pci_type="{ptype}" pci_link_speed="32.000000">')
                for n, t, sub in osdevs:
                    subtype = f' subtype="{sub}"' if sub else ""
                    out.append(f'{indent}  <object type="OSDev" gp_index="{next(gp)}" name="{n}"{subtype} osdev_type="{t}"/>')
                out.append(f'{indent}</object>')

        first = bus
        if switches is None:
            npk = nics_per_pkg[p] if isinstance(nics_per_pkg, list) else nics_per_pkg
            devs = [gpu_dev() for _ in range(gpus_per_pkg)] + [nic_dev() for _ in range(npk)]
            out.append(f'      <object type="Bridge" gp_index="{next(gp)}" bridge_type="0-1" depth="0" '
                       f'bridge_pci="0000:[{first:02x}-{bus - 1:02x}]">')
            emit(devs, "        ")
        else:
            span = sum(1 + g + n for g, n in switches)
            out.append(f'      <object type="Bridge" gp_index="{next(gp)}" bridge_type="0-1" depth="0" '
                       f'bridge_pci="0000:[{first:02x}-{first + span - 1:02x}]">')
            for g, n in switches:
                own = bus
                bus += 1
                devs = [gpu_dev() for _ in range(g)] + [nic_dev() for _ in range(n)]
                out.append(f'        <object type="Bridge" gp_index="{next(gp)}" bridge_type="1-1" depth="1" '
                           f'bridge_pci="0000:[{own + 1:02x}-{bus - 1:02x}]" pci_busid="0000:{own:02x}:00.0" '
                           f'pci_type="0604 [1000:c010] [1000:a064] b0" pci_link_speed="32.000000">')
                emit(devs, "          ")
                out.append('        </object>')
        out.append('      </object>')
        out.append('    </object>')
    out += ['  </object>', '</topology>', '']
    with open(name, "w") as f:
        f.write("\n".join(out))

machine("dgx_h200_8gpu_4nic.xml", packages=2, cores=4, gpus_per_pkg=4, nics_per_pkg=2)
machine("two_gpu_no_nic.xml", packages=1, cores=4, gpus_per_pkg=2, nics_per_pkg=0)
# HGX-style: every package holds two PCIe switches, each with two GPUs and one NIC (4 NICs) / one
# GPU and one NIC per switch (8) / one GPU and four NICs per switch (32, as EFA machines).
machine("hgx_8gpu_4nic_switches.xml", packages=2, cores=4, switches=[(2, 1), (2, 1)])
machine("hgx_8gpu_8nic_switches.xml", packages=2, cores=4, switches=[(1, 1)] * 4)
machine("hgx_8gpu_32nic_switches.xml", packages=2, cores=4, switches=[(1, 4)] * 4)
# NICs on one package only: the other package's GPUs cross the inter-socket link.
machine("hgx_8gpu_2nic_one_socket.xml", packages=2, cores=4,
        gpus_per_pkg=4, nics_per_pkg=[2, 0])
machine("cpu_only_eth.xml", packages=1, cores=2, gpus_per_pkg=0, nics_per_pkg=1, nic_class="0200")
