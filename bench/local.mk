# Benchmark scripts (not built, not run by make check): see bench/README.md.
EXTRA_DIST += bench/fio.sh bench/meta.sh bench/metadrv.c bench/common.sh bench/README.md
EXTRA_DIST += bench/peers.sh
EXTRA_DIST += bench/profiler.sh bench/profiler-writer.c
EXTRA_DIST += bench/borg.sh bench/borg.c
EXTRA_DIST += bench/reorg.sh
EXTRA_DIST += bench/cache.sh
EXTRA_DIST += bench/reca.sh
EXTRA_DIST += bench/simulate.sh bench/simborg.sh
EXTRA_DIST += bench/devday.sh
EXTRA_DIST += bench/script.sh
EXTRA_DIST += bench/pore.sh bench/openloop.sh bench/reserve.c
EXTRA_DIST += bench/kwb.sh
EXTRA_DIST += bench/soak-ab.sh
EXTRA_DIST += bench/datapath-ab.sh bench/agedisk.sh bench/blkprice.c
EXTRA_DIST += bench/gonefiles.sh
EXTRA_DIST += bench/dramline.sh
EXTRA_DIST += bench/requests.sh
