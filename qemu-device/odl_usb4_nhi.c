/*
 * OdinLink emulated USB4 host interface (odl-usb4-nhi): QOM type, PCI
 * identity, BAR0, MSI-X, properties and reset. Every BAR0 access goes to
 * the odl-linkd model server through odl_linkd_client.c; QEMU keeps PCI
 * config space and the MSI-X table, the model keeps all NHI state.
 *
 * Register map and command line: docs/qemu-device.md in the OdinLink tree.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qapi/error.h"
#include "hw/pci/pci.h"
#include "hw/pci/pcie.h"
#include "hw/pci/msix.h"
#include "hw/qdev-properties.h"
#include "sysemu/cpu-timers.h"
#include "migration/vmstate.h"
#include "odl_usb4_nhi.h"
#include "odl/wire/linkd.h"
#include "trace.h"

static uint64_t odl_nhi_bar0_read(void *opaque, hwaddr addr, unsigned size)
{
    OdlUsb4NhiState *s = opaque;
    uint64_t val = odl_linkd_mmio_read(s, ODL_NHI_BAR0, addr, size);

    trace_odl_nhi_mmio_read(addr, size, val);
    return val;
}

static void odl_nhi_bar0_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    OdlUsb4NhiState *s = opaque;

    trace_odl_nhi_mmio_write(addr, size, val);
    odl_linkd_mmio_write(s, ODL_NHI_BAR0, addr, val, size);
}

static const MemoryRegionOps odl_nhi_bar0_ops = {
    .read = odl_nhi_bar0_read,
    .write = odl_nhi_bar0_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    /* thunderbolt.ko only uses ioread32/iowrite32; allow 1..8 anyway. */
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/*
 * The testbed mailbox (deterministic mode): the guest's agent takes
 * `odl vm exec` commands from odl-linkd here, at simulated times the
 * server chooses (include/odl/wire/linkd.h, ODL_LINKD_MBOX_*).
 */
static uint64_t odl_nhi_mbox_read(void *opaque, hwaddr addr, unsigned size)
{
    return odl_linkd_mmio_read(opaque, ODL_LINKD_MBOX_BAR, addr, size);
}

static void odl_nhi_mbox_write(void *opaque, hwaddr addr, uint64_t val,
                               unsigned size)
{
    odl_linkd_mmio_write(opaque, ODL_LINKD_MBOX_BAR, addr, val, size);
}

static const MemoryRegionOps odl_nhi_mbox_ops = {
    .read = odl_nhi_mbox_read,
    .write = odl_nhi_mbox_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 4,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 4,
    },
};

static void odl_nhi_write_config(PCIDevice *pdev, uint32_t addr,
                                 uint32_t val, int len)
{
    OdlUsb4NhiState *s = ODL_USB4_NHI(pdev);
    uint16_t old_cmd = pci_get_word(pdev->config + PCI_COMMAND);
    bool old_msix = msix_enabled(pdev);
    bool old_masked = msix_enabled(pdev) && pdev->msix_function_masked;

    pci_default_write_config(pdev, addr, val, len);

    /* The model only needs to know what changes its behaviour. */
    if (old_cmd != pci_get_word(pdev->config + PCI_COMMAND) ||
        old_msix != msix_enabled(pdev) ||
        old_masked != (msix_enabled(pdev) && pdev->msix_function_masked)) {
        odl_linkd_send_devctrl(s);
    }
}

static void odl_nhi_realize(PCIDevice *pdev, Error **errp)
{
    OdlUsb4NhiState *s = ODL_USB4_NHI(pdev);
    int i;

    if (!s->socket_path || !*s->socket_path) {
        error_setg(errp, "odl-usb4-nhi: property 'socket' (odl-linkd socket "
                   "path) is required");
        return;
    }

    pci_set_word(pdev->config + PCI_VENDOR_ID, s->vendor_id);
    pci_set_word(pdev->config + PCI_DEVICE_ID, s->device_id);
    /* PCIDeviceClass has no prog-if; USB4 host interface is 0x40. */
    pci_config_set_prog_interface(pdev->config, ODL_NHI_CLASS & 0xff);
    pci_config_set_interrupt_pin(pdev->config, 1);

    memory_region_init_io(&s->bar0, OBJECT(s), &odl_nhi_bar0_ops, s,
                          "odl-usb4-nhi-bar0", ODL_NHI_BAR0_SIZE);
    pci_register_bar(pdev, ODL_NHI_BAR0, PCI_BASE_ADDRESS_SPACE_MEMORY |
                     PCI_BASE_ADDRESS_MEM_TYPE_64, &s->bar0);

    if (msix_init_exclusive_bar(pdev, ODL_NHI_MSIX_VECTORS, ODL_NHI_MSIX_BAR,
                                errp)) {
        return;
    }
    /* msix_notify() ignores vectors that are not marked used. */
    for (i = 0; i < ODL_NHI_MSIX_VECTORS; i++) {
        msix_vector_use(pdev, i);
    }

    if (pci_is_express(pdev) &&
        pcie_endpoint_cap_init(pdev, ODL_NHI_PCIE_CAP_OFFSET) < 0) {
        error_setg(errp, "odl-usb4-nhi: cannot add the PCIe capability");
        goto err_msix;
    }

    if (s->deterministic && !icount_enabled()) {
        error_setg(errp, "odl-usb4-nhi: deterministic=on needs QEMU's "
                   "instruction counting (-icount shift=N,sleep=off)");
        goto err_pcie;
    }
    if (s->deterministic) {
        memory_region_init_io(&s->mbox, OBJECT(s), &odl_nhi_mbox_ops, s,
                              "odl-usb4-nhi-mailbox", ODL_LINKD_MBOX_BYTES);
        pci_register_bar(pdev, ODL_LINKD_MBOX_BAR,
                         PCI_BASE_ADDRESS_SPACE_MEMORY, &s->mbox);
    }
    odl_linkd_init(s);
    /*
     * A server that answers but refuses us is a setup error. A server that
     * is not there (yet) is not: the link stays down and the client retries,
     * so the guest boots either way.
     */
    if (!odl_linkd_connect(s, errp)) {
        goto err_link;
    }
    return;

err_link:
    odl_linkd_cleanup(s);
err_pcie:
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
err_msix:
    msix_uninit_exclusive_bar(pdev);
}

static void odl_nhi_exit(PCIDevice *pdev)
{
    OdlUsb4NhiState *s = ODL_USB4_NHI(pdev);

    odl_linkd_cleanup(s);
    if (pci_is_express(pdev)) {
        pcie_cap_exit(pdev);
    }
    msix_uninit_exclusive_bar(pdev);
}

static void odl_nhi_reset(DeviceState *dev)
{
    OdlUsb4NhiState *s = ODL_USB4_NHI(dev);

    trace_odl_nhi_reset();
    odl_linkd_send_reset(s, ODL_LINKD_RESET_SYSTEM);
}

static Property odl_nhi_properties[] = {
    DEFINE_PROP_STRING("socket", OdlUsb4NhiState, socket_path),
    DEFINE_PROP_UINT32("host-id", OdlUsb4NhiState, host_id, 0),
    DEFINE_PROP_UINT16("vendor-id", OdlUsb4NhiState, vendor_id,
                       ODL_NHI_VENDOR_ID),
    DEFINE_PROP_UINT16("device-id", OdlUsb4NhiState, device_id,
                       ODL_NHI_DEVICE_ID),
    DEFINE_PROP_UINT32("reconnect-ms", OdlUsb4NhiState, reconnect_ms, 1000),
    DEFINE_PROP_BOOL("shared-ram", OdlUsb4NhiState, shared_ram, true),
    DEFINE_PROP_BOOL("deterministic", OdlUsb4NhiState, deterministic, false),
    DEFINE_PROP_END_OF_LIST(),
};

/* The model's state lives in another process: nothing to migrate. */
static const VMStateDescription odl_nhi_vmstate = {
    .name = TYPE_ODL_USB4_NHI,
    .unmigratable = 1,
};

static void odl_nhi_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    PCIDeviceClass *k = PCI_DEVICE_CLASS(klass);

    k->realize = odl_nhi_realize;
    k->exit = odl_nhi_exit;
    k->config_write = odl_nhi_write_config;
    k->vendor_id = ODL_NHI_VENDOR_ID;
    k->device_id = ODL_NHI_DEVICE_ID;
    k->revision = ODL_NHI_REVISION;
    k->class_id = ODL_NHI_CLASS >> 8;
    dc->desc = "OdinLink emulated USB4 host interface (model in odl-linkd)";
    dc->reset = odl_nhi_reset;
    dc->vmsd = &odl_nhi_vmstate;
    device_class_set_props(dc, odl_nhi_properties);
    set_bit(DEVICE_CATEGORY_MISC, dc->categories);
}

static void odl_nhi_instance_init(Object *obj)
{
    OdlUsb4NhiState *s = ODL_USB4_NHI(obj);

    s->link.fd = -1;
}

static const TypeInfo odl_nhi_info = {
    .name = TYPE_ODL_USB4_NHI,
    .parent = TYPE_PCI_DEVICE,
    .instance_size = sizeof(OdlUsb4NhiState),
    .instance_init = odl_nhi_instance_init,
    .class_init = odl_nhi_class_init,
    .interfaces = (InterfaceInfo[]) {
        { INTERFACE_PCIE_DEVICE },
        { INTERFACE_CONVENTIONAL_PCI_DEVICE },
        { }
    },
};

static void odl_nhi_register_types(void)
{
    type_register_static(&odl_nhi_info);
}

type_init(odl_nhi_register_types)
