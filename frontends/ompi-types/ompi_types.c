/*
 * ompi_types.c: debug types for a stripped libmpi.
 *
 * Open MPI's MQD DLL looks up 19 internal types (opal_list_t, ompi_communicator_t,
 * mca_pml_base_request_t, ...) in the debugger's type information. Debian strips libmpi, so a
 * debugger has none. Compiled with -g -fno-eliminate-unused-debug-types against the build's own
 * installed headers, this file carries exactly those definitions; loading the object into the
 * debugger (gdb: add-symbol-file) restores them. It defines no variables, so it can never shadow
 * a symbol of libmpi.
 *
 * build-ompi-types.sh passes the sizes the installed libmpi's own symbols have, and the
 * assertions below stop the build if these headers do not describe that library.
 */
#include "ompi_config.h"

#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/group/group.h"
#include "ompi/mca/pml/base/pml_base_recvreq.h"
#include "ompi/mca/pml/base/pml_base_request.h"
#include "ompi/mca/pml/base/pml_base_sendreq.h"
#include "ompi/mca/topo/topo.h"
#include "ompi/request/request.h"
#include "opal/class/opal_free_list.h"
#include "opal/class/opal_hash_table.h"
#include "opal/class/opal_list.h"
#include "opal/class/opal_pointer_array.h"

#ifdef MQD_EXPECT_FREE_LIST_SIZE /* size of mca_pml_base_send_requests in libmpi */
_Static_assert(sizeof(opal_free_list_t) == MQD_EXPECT_FREE_LIST_SIZE,
               "opal_free_list_t in these headers differs from the installed libmpi");
#endif
#ifdef MQD_EXPECT_POINTER_ARRAY_SIZE /* size of ompi_mpi_communicators in libmpi */
_Static_assert(sizeof(opal_pointer_array_t) == MQD_EXPECT_POINTER_ARRAY_SIZE,
               "opal_pointer_array_t in these headers differs from the installed libmpi");
#endif
