/* The C register header (spec/trn_regs_c.h, for the Linux module and guest programs) compiles as the kernel's C
 * (gnu11, -Wall -Wextra -Werror) and holds the map's values: each written here independently, as regs_test does for
 * the C++ header. Built by CTest (regs_c_header_compiles); a failing assertion fails the build of this file. */
#include "spec/trn_regs_c.h"

_Static_assert(TRN_ID == 0x000u, "ID at offset 0");
_Static_assert(TRN_ID_VALUE == 0x54524E32u, "ID reads TRN2");
_Static_assert(TRN_DOORBELL == 0x044u && TRN_STATUS == 0x048u, "DOORBELL, STATUS");
_Static_assert(TRN_STATUS_DONE_MASK == 0x2u && TRN_STATUS_ERROR_MASK == 0x4u, "STATUS fields");
_Static_assert(TRN_QUEUE_REG(1, TRN_Q_LEN) == 0x100u + 0x20u + TRN_Q_LEN, "queue 1's block at 0x120");
_Static_assert(TRN_ERR_DETAIL_REG(2) == 0xC08u, "ERR_DETAIL[2]");
_Static_assert(TRN_HBM_BASE == 0x10000000000ull && TRN_HOST_BASE == 0x1000000000000ull, "address map");
_Static_assert(TRN_PCI_VENDOR_ID == 0x1AF4u && TRN_PCI_DEVICE_ID == 0x10F0u, "PCI IDs");
_Static_assert(TRN_PCI_BAR_WINDOW == 2u && TRN_PCIE_WIN_LO == 0xF00u, "the window");
_Static_assert(TRN_ERR_HOST_ACCESS == 23u && TRN_ERR_NO_HALT == 11u, "error codes");

int trn_regs_c_header_names_ok(void);
int trn_regs_c_header_names_ok(void) {
  return trn_errcode_names[TRN_ERR_HOST_ACCESS][0] == 'h' && trn_errcode_names[TRN_ERR_NONE][0] == 'n';
}
