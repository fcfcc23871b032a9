/* Paths from any machine, one rule (issue 33): the frame classifier on the layouts people
 * record on (Windows drive letters and backslashes, Lib\site-packages, conda, uv,
 * dist-packages, eggs, source checkouts of torch, Inductor's cache wherever it is), how
 * sites print them, and which frame is the site and the user's line when torch.compile's
 * generated code made an allocation. Snapshots are built byte by byte. */
#include "check.h"
#include "chart.h"
#include "memsnap/memsnap.h"
#include "model/paths.h"
#include "pickle_writer.h"

/* ------------------------------------------------------------------ the path rules */

typedef struct path_case {
    const char *path;
    ms__file_kind kind;
} path_case;

#define HASH "cztfzrzae6ykyuobyzhve6z44ileomnuw7uv7spxauemxiw6vduc"

static const path_case CASES[] = {
    /* The user's code, wherever it lives. */
    {"/home/ml/train/x.py", MS__FILE_USER},
    {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", MS__FILE_USER},
    {"/opt/torch/train.py", MS__FILE_USER},          /* a directory named torch */
    {"/opt/torch/models/nn.py", MS__FILE_USER},
    {"/home/me/proj/lib/utils.py", MS__FILE_USER},   /* lib/ of a project, no pythonX.Y */
    {"/home/me/proj/lib/python3_tools/x.py", MS__FILE_USER},
    {"C:\\Users\\me\\proj\\lib\\helpers.py", MS__FILE_USER},
    {"D:\\work\\Lib\\helpers.py", MS__FILE_USER},    /* Lib\ of no interpreter */
    {"/tmp/ipykernel_1234/3467.py", MS__FILE_USER},
    {"train.py", MS__FILE_USER},
    /* torch's own package: installed, or a checkout (an editable install). */
    {"/opt/torch/.venv/lib/python3.12/site-packages/torch/nn/modules/module.py", MS__FILE_TORCH},
    {"D:\\Dev\\assignment2-systems\\.venv\\Lib\\site-packages\\torch\\functional.py", MS__FILE_TORCH},
    {"C:\\Users\\X\\miniconda3\\envs\\ml\\Lib\\site-packages\\torch\\nn\\modules\\linear.py",
     MS__FILE_TORCH},
    {"C:\\VENV\\LIB\\SITE-PACKAGES\\TORCH\\autograd\\__init__.py", MS__FILE_TORCH},
    {"/usr/lib/python3/dist-packages/torch/autograd/graph.py", MS__FILE_TORCH},
    {"/opt/conda/lib/python3.11/site-packages/torch/_tensor.py", MS__FILE_TORCH},
    {"/root/.cache/uv/archive-v0/Xy12/lib/python3.11/site-packages/torch/cuda/memory.py",
     MS__FILE_TORCH},
    {"/v/lib/python3.10/site-packages/torch-2.0.1-py3.10-linux-x86_64.egg/torch/nn/x.py",
     MS__FILE_TORCH},
    {"/app/.deps/torch-2.3.0-cp311-cp311-linux_x86_64.whl/torch/utils/data.py", MS__FILE_TORCH},
    {"/home/me/src/pytorch/torch/nn/modules/module.py", MS__FILE_TORCH},
    {"/home/me/dev/torch-build/torch/_ops.py", MS__FILE_TORCH},
    {"D:\\src\\pytorch\\torch\\optim\\adamw.py", MS__FILE_TORCH},
    {"torch/nn/functional.py", MS__FILE_TORCH},
    /* torch.compile's own frames and the code it writes. */
    {"/opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/eval_frame.py",
     MS__FILE_COMPILER},
    {"D:\\x\\.venv\\Lib\\site-packages\\torch\\_inductor\\output_code.py", MS__FILE_COMPILER},
    {"/home/me/pytorch/torch/_inductor/select_algorithm.py", MS__FILE_COMPILER},
    {"/tmp/torchinductor_ml/zt/" HASH ".py", MS__FILE_GENERATED},
    {"/tmp/torchinductor_root/ab/cabxyz.py", MS__FILE_GENERATED},
    {"C:\\Users\\X\\AppData\\Local\\Temp\\torchinductor_X\\zt\\" HASH ".py", MS__FILE_GENERATED},
    {"/scratch/inductor-cache/zt/" HASH ".py", MS__FILE_GENERATED}, /* a moved cache */
    {"/scratch/inductor-cache/xx/" HASH ".py", MS__FILE_USER},      /* not its directory */
    {"<eval_with_key>.12", MS__FILE_GENERATED},
    /* Other installed packages. */
    {"/opt/conda/lib/python3.11/site-packages/transformers/modeling_utils.py", MS__FILE_LIBRARY},
    {"D:\\Dev\\a\\.venv\\Lib\\site-packages\\transformers\\pytorch_utils.py", MS__FILE_LIBRARY},
    {"/usr/local/lib/python3.10/dist-packages/accelerate/accelerator.py", MS__FILE_LIBRARY},
    {"/v/lib/python3.12/site-packages/torchvision/ops/boxes.py", MS__FILE_LIBRARY},
    {"/opt/torch/.venv/lib/python3.12/site-packages/apex/optimizers/fused_adam.py",
     MS__FILE_LIBRARY},
    /* The interpreter's own library. */
    {"/usr/lib/python3.12/contextlib.py", MS__FILE_STDLIB},
    {"/usr/lib64/python3.11/threading.py", MS__FILE_STDLIB},
    {"/opt/conda/lib/python3.11/multiprocessing/spawn.py", MS__FILE_STDLIB},
    {"/opt/conda/envs/ml/lib/python3.13t/runpy.py", MS__FILE_STDLIB},
    {"/home/me/.local/share/uv/python/cpython-3.12.3-linux-x86_64-gnu/lib/python3.12/runpy.py",
     MS__FILE_STDLIB},
    {"/opt/pypy/lib/pypy3.10/contextlib.py", MS__FILE_STDLIB},
    {"C:\\Python311\\Lib\\contextlib.py", MS__FILE_STDLIB},
    {"C:\\Users\\X\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\threading.py",
     MS__FILE_STDLIB},
    {"C:\\Users\\X\\anaconda3\\Lib\\contextlib.py", MS__FILE_STDLIB},
    {"C:\\Users\\X\\miniconda3\\envs\\ml\\Lib\\runpy.py", MS__FILE_STDLIB},
    {"C:\\Users\\X\\AppData\\Roaming\\uv\\python\\cpython-3.12.3-windows-x86_64-none\\Lib\\runpy.py",
     MS__FILE_STDLIB},
    {"C:\\Users\\X\\.pyenv\\pyenv-win\\versions\\3.11.0\\Lib\\asyncio\\runners.py",
     MS__FILE_STDLIB},
    {"C:\\py\\python311.zip\\contextlib.py", MS__FILE_STDLIB},
    /* Not Python. */
    {"/opt/torch/.venv/lib/python3.12/site-packages/torch/lib/libtorch_cuda.so", MS__FILE_NATIVE},
    {"C:\\x\\.venv\\Lib\\site-packages\\torch\\lib\\torch_cuda.dll", MS__FILE_NATIVE},
    {"??", MS__FILE_NATIVE},
    {"", MS__FILE_NATIVE},
};

static void check_kinds(void)
{
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++)
        CHECK_EQ_INT_IN(CASES[i].path, ms__file_classify(CASES[i].path), CASES[i].kind);
    /* A path of more parts than the splitter keeps is read by its last parts. */
    char deep[4096] = "";
    for (int k = 0; k < 300; k++)
        strcat(deep, "/d");
    strcat(deep, "/site-packages/torch/nn/x.py");
    CHECK_EQ_INT_IN("300 parts deep", ms__file_classify(deep), MS__FILE_TORCH);
    char buf[64];
    CHECK_EQ_INT(ms_path_format(deep, buf, sizeof buf), 7);
    CHECK_EQ_STR(buf, "nn/x.py");
}

static void check_short(void)
{
    static const char *const in[][2] = {
        {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", "cs336_basics/model.py"},
        {"/home/ml/train/x.py", "train/x.py"},
        {"C:\\mixed/dir\\x.py", "dir/x.py"},
        {"a/b.py", "a/b.py"},
        {"/a/b.py", "a/b.py"},
        {"/x.py", "/x.py"}, /* fewer parts than two: whole, as before */
        {"x.py", "x.py"},
        {"", ""},
    };
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char buf[64];
        size_t n = ms_path_format(in[i][0], buf, sizeof buf);
        CHECK_EQ_STR_IN(in[i][0], buf, in[i][1]);
        CHECK_EQ_INT_IN(in[i][0], n, strlen(in[i][1]));
    }
    /* A text writer: the whole length, and a cut text still ends in a NUL. */
    char small[6];
    CHECK_EQ_INT(ms_path_format("D:\\Dev\\cs336_basics\\model.py", small, sizeof small), 21);
    CHECK_EQ_STR(small, "cs336");
    CHECK_EQ_INT(ms_path_format("D:\\Dev\\cs336_basics\\model.py", NULL, 0), 21);
}

/* ------------------------------------------------------------------ a crafted snapshot */

typedef struct fr {
    const char *file;
    int line;
    const char *name;
} fr;

/* {'segments': [], 'device_traces': [[one alloc per stack]]}, at the given microseconds
 * after 1700000000 s (NULL: 1 ms apart). */
static pk build(const fr *const *stacks, const size_t *depth, size_t n_stacks, const int *at_us)
{
    pk w = {0};
    op(&w, (char)0x80); op(&w, 4);
    op(&w, '}'); op(&w, '(');
    str(&w, "segments"); op(&w, ']');
    str(&w, "device_traces"); op(&w, ']'); op(&w, ']');
    for (size_t k = 0; k < n_stacks; k++) {
        op(&w, '}'); op(&w, '(');
        str(&w, "action"); str(&w, "alloc");
        str(&w, "addr"); num(&w, (int64_t)(4096 * (k + 1)));
        str(&w, "size"); num(&w, 512);
        str(&w, "stream"); num(&w, 0);
        str(&w, "time_us"); num(&w, 1700000000000000LL + (at_us ? at_us[k] : 1000 * (int64_t)k));
        str(&w, "frames"); op(&w, ']'); op(&w, '(');
        for (size_t f = 0; f < depth[k]; f++) {
            op(&w, '}'); op(&w, '(');
            str(&w, "filename"); str(&w, stacks[k][f].file);
            str(&w, "line"); num(&w, stacks[k][f].line);
            str(&w, "name"); str(&w, stacks[k][f].name);
            op(&w, 'u');
        }
        op(&w, 'e');              /* APPENDS: the frames */
        op(&w, 'u'); op(&w, 'a'); /* the entry's items, into the trace */
    }
    op(&w, 'a');                  /* the trace into device_traces */
    op(&w, 'u'); op(&w, '.');
    return w;
}

#define VENV "D:\\Dev\\assignment2-systems\\.venv\\Lib\\site-packages\\"
#define TEMP "C:\\Users\\X\\AppData\\Local\\Temp\\torchinductor_X\\zt\\" HASH ".py"

/* Eager: torch's einsum called by the user's model, called by the training loop. */
static const fr EAGER[] = {
    {VENV "torch\\functional.py", 373, "einsum"},
    {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", 88, "forward"},
    {VENV "torch\\nn\\modules\\module.py", 1790, "_call_impl"},
    {"D:\\Dev\\assignment2-systems\\cs336_systems\\train.py", 155, "main"},
    {"C:\\Python311\\Lib\\runpy.py", 88, "_run_code"},
};
/* Compiled: Inductor's partition_0 at two lines, run by torch's runtime, called by the
 * user's forward that Dynamo rewrote, called by the training loop. */
static const fr COMPILED_A[] = {
    {VENV "torch\\_ops.py", 865, "__call__"},
    {TEMP, 540, "partition_0"},
    {VENV "torch\\_inductor\\output_code.py", 656, "__call__"},
    {VENV "torch\\_dynamo\\eval_frame.py", 1263, "_fn"},
    {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", 80, "forward"},
    {VENV "torch\\_dynamo\\eval_frame.py", 1024, "compile_wrapper"},
    {"D:\\Dev\\assignment2-systems\\cs336_systems\\train.py", 155, "main"},
};
static const fr COMPILED_B[] = {
    {TEMP, 577, "partition_0"},
    {VENV "torch\\_inductor\\output_code.py", 656, "__call__"},
    {VENV "torch\\_dynamo\\eval_frame.py", 1263, "_fn"},
    {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", 80, "forward"},
    {VENV "torch\\_dynamo\\eval_frame.py", 1024, "compile_wrapper"},
    {"D:\\Dev\\assignment2-systems\\cs336_systems\\train.py", 155, "main"},
};
/* The recording kept the op's source line right outside the generated frame. */
static const fr COMPILED_SOURCE[] = {
    {TEMP, 600, "call"},
    {"D:\\Dev\\assignment2-systems\\cs336_basics\\model.py", 61, "forward"},
    {VENV "torch\\_inductor\\utils.py", 3401, "run"},
    {VENV "torch\\_dynamo\\eval_frame.py", 1024, "compile_wrapper"},
    {"D:\\Dev\\assignment2-systems\\cs336_systems\\train.py", 155, "main"},
};
/* Bracketed Python names and a C++ template. */
static const fr LAMBDA[] = {
    {"/opt/conda/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so", 0,
     "void at::native::gemm<float, 4>(at::Tensor&, c10::ArrayRef<long>) const"},
    {"/home/ml/train/x.py", 12, "<lambda>"},
    {"/home/ml/train/x.py", 30, "<module>"},
};
static const fr NATIVE_ONLY[] = {
    {"C:\\x\\.venv\\Lib\\site-packages\\torch\\lib\\torch_cpu.dll", 0,
     "std::vector<at::Tensor> torch::autograd::Node::apply(std::vector<at::Tensor>&&)"},
};

static void site_is(const char *ctx, const ms_snapshot *s, uint32_t frame, const char *want)
{
    char buf[256];
    ms_site_format(s, frame, buf, sizeof buf);
    CHECK_EQ_STR_IN(ctx, buf, want);
}

static void check_sites(void)
{
    const fr *const stacks[] = {EAGER, COMPILED_A, COMPILED_B, COMPILED_SOURCE, LAMBDA,
                                NATIVE_ONLY};
    const size_t depth[] = {5, 7, 6, 5, 3, 1};
    pk w = build(stacks, depth, 6, NULL);
    ms_snapshot *s = NULL;
    ms_error err;
    if (ms_snapshot_read_memory(&s, w.p, w.n, NULL, &err)) {
        check_fail("crafted snapshot: %s", err.message);
        free(w.p);
        return;
    }
    const ms_trace *tr = ms_snapshot_trace(s, 0);
    CHECK_EQ_INT(tr->n, 6);
    if (tr->n != 6)
        goto done;
    const uint32_t *st = tr->stack;
    size_t n = 0;
    const uint32_t *f = ms_snapshot_stack(s, st[0], &n);
    /* Windows frames: torch's are torch's, the interpreter's are not the user's line. */
    CHECK_EQ_INT(ms_frame_kind_of(s, f[0]), MS_FRAME_TORCH);
    CHECK_EQ_INT(ms_frame_kind_of(s, f[1]), MS_FRAME_USER);
    CHECK_EQ_INT(ms_frame_kind_of(s, f[2]), MS_FRAME_TORCH);
    CHECK_TRUE(ms_frame_is_stdlib(s, f[4]));
    site_is("eager site", s, ms_stack_site(s, st[0]), "cs336_basics/model.py:88 forward");
    site_is("eager user", s, ms_stack_user_frame(s, st[0]), "cs336_basics/model.py:88 forward");
    site_is("torch frame", s, f[0], "torch/functional.py:373 einsum");

    /* Compiled: one site for both lines of partition_0, named by what it is; the user's
     * line is the call of the compiled model, not the forward Dynamo rewrote. */
    uint32_t a = ms_stack_site(s, st[1]), b = ms_stack_site(s, st[2]);
    CHECK_EQ_INT(a, b);
    site_is("compiled site", s, a, "compiled partition_0 (inductor cztfzrza)");
    CHECK_TRUE((ms_frame_classify(s, a).roles & MS_FRAME_ROLE_GENERATED) != 0);
    CHECK_EQ_INT(ms_frame_kind_of(s, a), MS_FRAME_COMPILED);
    char loc[64], fn[64];
    ms_site_format_location(s, a, loc, sizeof loc);
    ms_site_format_function(s, a, fn, sizeof fn);
    CHECK_EQ_STR(loc, "compiled");
    CHECK_EQ_STR(fn, "partition_0 (inductor cztfzrza)");
    site_is("compiled user A", s, ms_stack_user_frame(s, st[1]),
            "cs336_systems/train.py:155 main");
    site_is("compiled user B", s, ms_stack_user_frame(s, st[2]),
            "cs336_systems/train.py:155 main");
    /* With the op's source line kept, that line is the site and the user's line. */
    site_is("source site", s, ms_stack_site(s, st[3]), "cs336_basics/model.py:61 forward");
    site_is("source user", s, ms_stack_user_frame(s, st[3]), "cs336_basics/model.py:61 forward");

    /* Python's bracketed names as they are; C++ templates still shortened. */
    site_is("lambda", s, ms_stack_site(s, st[4]), "train/x.py:12 <lambda>");
    f = ms_snapshot_stack(s, st[4], &n);
    site_is("module", s, f[2], "train/x.py:30 <module>");
    site_is("template", s, f[0], "libtorch_cuda.so at::native::gemm");
    site_is("windows native", s, ms_stack_site(s, st[5]), "torch_cpu.dll torch::autograd::Node::apply");
    /* Longer paths tell sites apart. */
    char wide[128];
    ms_site_format_parts(s, ms_stack_site(s, st[0]), 3, wide, sizeof wide);
    CHECK_EQ_STR(wide, "assignment2-systems/cs336_basics/model.py:88 forward");
    ms_site_format_parts(s, ms_stack_site(s, st[0]), 0, wide, sizeof wide);
    CHECK_EQ_STR(wide, "D:/Dev/assignment2-systems/cs336_basics/model.py:88 forward");
done:
    ms_snapshot_free(s);
    free(w.p);
}

/* ------------------------------------------------------------------ degenerate clocks */

static msr_chart *chart_of(const ms_snapshot *s, ms_timeline **tl)
{
    ms_error err;
    *tl = NULL;
    if (ms_timeline_build(tl, s, 0, MS_TIMELINE_CURVES | MS_TIMELINE_ALLOCS, &err)) {
        check_fail("timeline: %s", err.message);
        return NULL;
    }
    msr_chart_source src = {.snap = s, .trace = ms_snapshot_trace(s, 0), .tl = *tl, .label = "x"};
    msr_chart_spec spec;
    memset(&spec, 0, sizeof spec);
    msr_chart *ch = NULL;
    if (msr_chart_build(&ch, &src, &spec, (msr_chart_rect){0, 0, 1200, 600}, &err))
        check_fail("chart: %s", err.message);
    return ch;
}

/* Events stamped at one instant have no clock: the event index stands for it, so no axis
 * repeats "0.000000 s" and the peak is at an event; a span of a few microseconds ticks at
 * whole microseconds, each label its own. */
static void check_clocks(void)
{
    const fr *const stacks[] = {LAMBDA + 1, LAMBDA + 1, LAMBDA + 1, LAMBDA + 1};
    const size_t depth[] = {1, 1, 1, 1};
    static const int instant[] = {0, 0, 0, 0}, one[] = {7}, tiny[] = {0, 1, 3, 3};
    const int *times[] = {instant, one, tiny};
    const size_t n[] = {4, 1, 4};
    for (int c = 0; c < 3; c++) {
        const char *ctx = c == 0 ? "one instant" : c == 1 ? "one event" : "3 us";
        pk w = build(stacks, depth, n[c], times[c]);
        ms_snapshot *s = NULL;
        ms_error err;
        if (ms_snapshot_read_memory(&s, w.p, w.n, NULL, &err)) {
            check_fail("%s: %s", ctx, err.message);
            free(w.p);
            continue;
        }
        const ms_trace *tr = ms_snapshot_trace(s, 0);
        CHECK_EQ_INT_IN(ctx, tr->has_times, c == 2);
        CHECK_EQ_INT_IN(ctx, tr->one_instant, c != 2);
        ms_timeline *tl = NULL;
        msr_chart *ch = chart_of(s, &tl);
        if (ch) {
            CHECK_TRUE_IN(ctx, ch->n_xticks >= 2);
            for (size_t i = 0; i < ch->n_xticks; i++)
                for (size_t j = i + 1; j < ch->n_xticks; j++)
                    CHECK_TRUE_IN(ctx, strcmp(ch->xticks[i].label, ch->xticks[j].label) != 0);
            CHECK_TRUE_IN(ctx, strstr(ch->peak_label, c == 2 ? "at 0.000003 s" : "at event") != NULL);
        }
        msr_chart_free(ch);
        ms_timeline_free(tl);
        ms_snapshot_free(s);
        free(w.p);
    }
}

int main(void)
{
    check_kinds();
    check_short();
    check_sites();
    check_clocks();
    return check_finish("test_paths");
}
