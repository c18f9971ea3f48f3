# SPDX-License-Identifier: GPL-2.0
# Feature probes, included by the top-level Kbuild: what this kernel's
# headers provide, decided at build time (DKMS builds run them too). Each
# sets CGE_HAVE_<NAME> to 1 or 0 for kmod/compat.h, and the build log shows
# them all in one line per build.
#
# A probe looks for the declaration in the header that holds it: grep of a
# pattern that only the new interface matches (no parentheses: make would
# take them for its own). $(srctree) is the kernel's
# source tree (Debian: the -common headers package).

# cge_probe <header under $(srctree)> <extended regular expression>
cge_probe = $(if $(shell grep -qsE '$(2)' '$(srctree)/$(1)' && echo y),1,0)

# 6.7: inode timestamps set with simple_inode_init_ts()
CGE_HAVE_SIMPLE_INODE_INIT_TS := $(call cge_probe,include/linux/fs.h,simple_inode_init_ts)
# 6.15: kernfs_node.name is RCU-protected
CGE_HAVE_KN_NAME_RCU := $(call cge_probe,include/linux/kernfs.h,__rcu[[:space:]]*\*name;)
# 6.14: d_revalidate() is given the parent inode and the name
CGE_HAVE_D_REVALIDATE_DIR := $(call cge_probe,include/linux/dcache.h,d_revalidate..struct inode)
# 6.17: super_block.s_d_op is set with set_default_d_op()
CGE_HAVE_SET_DEFAULT_D_OP := $(call cge_probe,include/linux/dcache.h,set_default_d_op)
# 6.18: generic_delete_inode() renamed inode_just_drop()
CGE_HAVE_INODE_JUST_DROP := $(call cge_probe,include/linux/fs.h,inode_just_drop)
# 6.16: rdmsrl_safe() renamed rdmsrq_safe() (rdmsrl_safe_on_cpu() with it)
CGE_HAVE_RDMSRQ := $(call cge_probe,arch/x86/include/asm/msr.h,int rdmsrq_safe[[:space:]]*.u32)
# 6.17 (and stable backports, as Debian's 6.12): system_percpu_wq
CGE_HAVE_SYSTEM_PERCPU_WQ := $(call cge_probe,include/linux/workqueue.h,\*system_percpu_wq;)
# 6.6, and stable backports (Debian's 6.1): inode_set_ctime_current()
CGE_HAVE_INODE_SET_CTIME_CURRENT := $(call cge_probe,include/linux/fs.h,inode_set_ctime_current)
# 6.9: topology_max_die_per_package() renamed topology_max_dies_per_package()
CGE_HAVE_MAX_DIES := $(call cge_probe,arch/x86/include/asm/topology.h,topology_max_dies_per_package)

# 5.18: sched_switch passes the previous task's state
CGE_HAVE_SCHED_SWITCH_PREV_STATE := $(call cge_probe,include/trace/events/sched.h,unsigned int prev_state)
# not in 5.10: cgroup_get_from_id()
CGE_HAVE_CGROUP_GET_FROM_ID := $(call cge_probe,include/linux/cgroup.h,cgroup_get_from_id)
# not in 5.10: X86_FEATURE_RAPL, AMD's CPUID RAPL bit
CGE_HAVE_X86_FEATURE_RAPL := $(call cge_probe,arch/x86/include/asm/cpufeatures.h,X86_FEATURE_RAPL[[:space:]])
# 5.14: task_is_running(), with task_struct.state renamed __state
CGE_HAVE_TASK_IS_RUNNING := $(call cge_probe,include/linux/sched.h,define task_is_running)
# 5.19: housekeeping types are enum hk_type (HK_TYPE_TIMER), not hk_flags
CGE_HAVE_HK_TYPE := $(call cge_probe,include/linux/sched/isolation.h,enum hk_type)
# 6.3 (and Debian's 6.1): cpu_is_isolated()
CGE_HAVE_CPU_IS_ISOLATED := $(call cge_probe,include/linux/sched/isolation.h,bool cpu_is_isolated)
# not in 5.10: TAINT_TEST (in linux/panic.h, which 5.10 does not have)
CGE_HAVE_TAINT_TEST := $(call cge_probe,include/linux/panic.h,define TAINT_TEST)
# 7.x: cgroup_has_tasks() in cgroup.h (the populated counts are the css's)
CGE_HAVE_CGROUP_HAS_TASKS := $(call cge_probe,include/linux/cgroup.h,bool cgroup_has_tasks)
# 5.12: file_open_root() takes a struct path, not a dentry and a mount
CGE_HAVE_FILE_OPEN_ROOT_PATH := $(call cge_probe,include/linux/fs.h,file_open_root.const struct path)

CGE_PROBES := SIMPLE_INODE_INIT_TS KN_NAME_RCU D_REVALIDATE_DIR \
	      SET_DEFAULT_D_OP INODE_JUST_DROP RDMSRQ SYSTEM_PERCPU_WQ \
	      INODE_SET_CTIME_CURRENT MAX_DIES SCHED_SWITCH_PREV_STATE \
	      CGROUP_GET_FROM_ID X86_FEATURE_RAPL TAINT_TEST TASK_IS_RUNNING \
	      HK_TYPE CPU_IS_ISOLATED CGROUP_HAS_TASKS FILE_OPEN_ROOT_PATH
ccflags-y += $(foreach p,$(CGE_PROBES),-DCGE_HAVE_$(p)=$(CGE_HAVE_$(p)))
# once per build: in the compile pass, not again when modpost reads this
ifneq ($(findstring Makefile.build,$(MAKEFILE_LIST)),)
$(info cgroup_energy: probes for $(KERNELRELEASE): $(foreach p,$(CGE_PROBES),$(p)=$(CGE_HAVE_$(p))))
endif
