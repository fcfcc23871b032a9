# Sourced by the run_*.sh recorders on the GPU machine. The scripts are copied to
# /home/ml/train ($here) first, so stack frames name a neutral path; recordings go to
# $out (OUT, default /tmp/snaps). Named .bash: it records nothing itself.
src=$(cd "$(dirname "$0")" && pwd)
mkdir -p /home/ml/train && cp "$src"/*.py /home/ml/train/
here=/home/ml/train
out=${OUT:-/tmp/snaps}; mkdir -p "$out"
export TORCH_SYMBOLIZE_MODE=${TORCH_SYMBOLIZE_MODE:-fast}
