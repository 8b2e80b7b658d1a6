// lilv (LV2 plugin discovery and instances) and the LV2 extensions an LV2 host passes to plugins.
// Full paths, not pkg-config's flags: PipeWire 1.4.2's build sets a sysroot that would misplace them.
#include "/usr/include/lilv-0/lilv/lilv.h"
#include <lv2/atom/atom.h>
#include <lv2/options/options.h>
#include <lv2/urid/urid.h>
