# The device layer every byte goes through: real devices, device models
# (HDD, SSD, SMR) and fault injection.
noinst_LIBRARIES += device/libhydevice.a
device_libhydevice_a_SOURCES = device/device.c device/devmodel.c device/fault.c device/emuvfs.c
device_libhydevice_a_CFLAGS = $(AM_CFLAGS) $(BLKID_CFLAGS)
