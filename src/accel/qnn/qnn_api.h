/* The subset of Qualcomm's QNN C API (core 2.x, HTP backend, System) that the
 * npullm QNN adapter uses, declared by hand: no SDK headers exist on the build
 * machines. Field order and types follow QnnTypes.h, QnnInterface.h,
 * HTP/QnnHtpDevice.h, HTP/QnnHtpGraph.h, HTP/QnnHtpContext.h and
 * System/QnnSystemInterface.h of QNN 2.x; the sizes and offsets asserted at
 * the end are the ones verified against libQnnHtp.so v2.51 (core API 2.40,
 * HTP API 5.51) by ../shared/qnn-probe. x86_64 / aarch64 LP64 only. */
#ifndef NPL_QNN_API_H
#define NPL_QNN_API_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t Qnn_ErrorHandle_t;
typedef void *Qnn_Handle_t; /* backend, device, context, graph, log, profile, signal */
typedef uint64_t Qnn_ContextBinarySize_t;
#define QNN_SUCCESS 0u

/* Data types: high byte = class (int, uint, float, sfixed, ufixed, bool), low byte = bits. */
enum {
    QNN_DATATYPE_INT_32 = 0x0032,
    QNN_DATATYPE_UINT_32 = 0x0132,
    QNN_DATATYPE_FLOAT_16 = 0x0216,
    QNN_DATATYPE_FLOAT_32 = 0x0232,
    QNN_DATATYPE_SFIXED_POINT_8 = 0x0308,
    QNN_DATATYPE_SFIXED_POINT_16 = 0x0316,
    QNN_DATATYPE_SFIXED_POINT_32 = 0x0332,
    QNN_DATATYPE_UFIXED_POINT_8 = 0x0408,
    QNN_DATATYPE_UFIXED_POINT_16 = 0x0416,
    QNN_DATATYPE_BOOL_8 = 0x0508,
};
enum {
    QNN_TENSOR_TYPE_APP_WRITE = 0,
    QNN_TENSOR_TYPE_APP_READ = 1,
    QNN_TENSOR_TYPE_APP_READWRITE = 2,
    QNN_TENSOR_TYPE_NATIVE = 3,
    QNN_TENSOR_TYPE_STATIC = 4,
};
enum { QNN_PARAMTYPE_SCALAR = 0, QNN_PARAMTYPE_TENSOR = 1 };
enum { QNN_DEFINITION_DEFINED = 1, QNN_DEFINITION_UNDEFINED = 0x7FFFFFFF };
/* BLOCK (4) is never emitted: MatMul with it kills the process (SIGFPE) in v2.51. */
enum {
    QNN_QUANTIZATION_ENCODING_SCALE_OFFSET = 0,
    QNN_QUANTIZATION_ENCODING_AXIS_SCALE_OFFSET = 1,
    QNN_QUANTIZATION_ENCODING_BW_AXIS_SCALE_OFFSET = 3,
    QNN_QUANTIZATION_ENCODING_BLOCKWISE_EXPANSION = 5,
    QNN_QUANTIZATION_ENCODING_UNDEFINED = 0x7FFFFFFF
};
enum { QNN_TENSORMEMTYPE_RAW = 0 };
enum { QNN_TENSOR_VERSION_2 = 2, QNN_OPCONFIG_VERSION_1 = 1 };
enum { QNN_PRECISION_FLOAT16 = 1 };
enum { QNN_LOG_LEVEL_ERROR = 1, QNN_LOG_LEVEL_WARN = 2, QNN_LOG_LEVEL_INFO = 3 };

typedef struct {
    uint32_t major, minor, patch;
} Qnn_Version_t;
typedef struct {
    Qnn_Version_t core, backend;
} Qnn_ApiVersion_t;

typedef struct {
    uint32_t dataType;
    union {
        float f32;
        double f64;
        uint32_t u32;
        int32_t i32;
        uint8_t b8;
        const char *str;
    };
} Qnn_Scalar_t;

typedef struct {
    float scale;
    int32_t offset;
} Qnn_ScaleOffset_t;
typedef struct {
    int32_t axis;
    uint32_t numScaleOffsets;
    Qnn_ScaleOffset_t *scaleOffset;
} Qnn_AxisScaleOffset_t;
/* Per-axis scales of values narrower than the container (int8 holding 4-bit values). */
typedef struct {
    uint32_t bitwidth;
    int32_t axis;
    uint32_t numElements;
    float *scales;
    int32_t *offsets;
} Qnn_BwAxisScaleOffset_t;

/* Blockwise expansion ("LPBQ"): a scale / offset per channel of `axis`, the
 * other axis cut into numBlocksPerAxis blocks, each with an unsigned integer
 * multiplier of blockScaleBitwidth bits (stored one per byte with storage 8),
 * blocksScale8[channel * numBlocksPerAxis + block] (the probe p7_lpbq's
 * block-varying weights tell that order from the other). */
enum { QNN_BLOCKWISE_EXPANSION_BITWIDTH_SCALE_STORAGE_8 = 0 };
typedef struct {
    int32_t axis;
    Qnn_ScaleOffset_t *scaleOffsets;
    uint32_t numBlocksPerAxis;
    uint32_t blockScaleBitwidth;
    uint32_t blockScaleStorageType;
    uint8_t *blocksScale8;
} Qnn_BlockwiseExpansion_t;

typedef struct {
    uint32_t encodingDefinition;
    uint32_t quantizationEncoding;
    union {
        Qnn_ScaleOffset_t scaleOffset;
        Qnn_AxisScaleOffset_t axisScaleOffset;
        Qnn_BwAxisScaleOffset_t bwAxisScaleOffset;
        Qnn_BlockwiseExpansion_t *blockwiseExpansion;
        uint8_t size_[32]; /* the largest member (bitwidth-axis encoding) is 32 bytes */
    };
} Qnn_QuantizeParams_t;

typedef struct {
    void *data;
    uint32_t dataSize;
} Qnn_ClientBuffer_t;

typedef struct {
    uint32_t id;
    const char *name;
    uint32_t type;
    uint32_t dataFormat;
    uint32_t dataType;
    Qnn_QuantizeParams_t quantizeParams;
    uint32_t rank;
    uint32_t *dimensions;
    uint32_t memType;
    union {
        Qnn_ClientBuffer_t clientBuf;
        void *memHandle;
    };
    uint8_t *isDynamicDimensions;
    struct {
        uint32_t type, numSpecifiedElements, numSparseDimensions;
    } sparseParams;
    uint8_t isProduced;
} Qnn_TensorV2_t;

typedef struct {
    uint32_t version; /* QNN_TENSOR_VERSION_2 */
    Qnn_TensorV2_t v2;
} Qnn_Tensor_t;

typedef struct {
    uint32_t paramType;
    const char *name;
    union {
        Qnn_Scalar_t scalarParam;
        Qnn_Tensor_t tensorParam;
    };
} Qnn_Param_t;

typedef struct {
    uint32_t version; /* QNN_OPCONFIG_VERSION_1 */
    const char *name;
    const char *packageName;
    const char *typeName;
    uint32_t numOfParams;
    Qnn_Param_t *params;
    uint32_t numOfInputs;
    Qnn_Tensor_t *inputTensors;
    uint32_t numOfOutputs;
    Qnn_Tensor_t *outputTensors;
} Qnn_OpConfig_t;

/* Backend / device / context / graph configs share one shape: an option and
 * a pointer (QNN_CONFIG_OPTION_CUSTOM = 0 points to a backend-specific struct). */
typedef struct {
    uint32_t option;
    union {
        void *custom;
        uint64_t u64;
    };
} Qnn_Config_t;
#define QNN_CONFIG_OPTION_CUSTOM 0u

/* HTP device custom config: target SoC and HTP architecture. */
enum { QNN_HTP_DEVICE_CONFIG_OPTION_SOC = 0, QNN_HTP_DEVICE_CONFIG_OPTION_ARCH = 1 };
typedef struct {
    uint32_t option;
    union {
        uint32_t socModel;
        struct {
            uint32_t deviceId, arch;
        } arch;
        void *ext_;
    };
} QnnHtpDevice_CustomConfig_t;

/* HTP graph custom config (only the precision option is used). */
enum { QNN_HTP_GRAPH_CONFIG_OPTION_PRECISION = 2 };
typedef struct {
    uint32_t option;
    union {
        uint32_t precision;
        uint8_t size_[48]; /* the largest member (parallel execution config) is 44 bytes */
    };
} QnnHtpGraph_CustomConfig_t;

/* HTP context custom config. */
enum { QNN_HTP_CONTEXT_CONFIG_OPTION_WEIGHT_SHARING_ENABLED = 1 };
typedef struct {
    uint32_t option;
    union { /* 8-aligned (its largest member, groupRegistration, is {pointer, uint64}): the flag is at +8 */
        uint8_t weightSharingEnabled;
        struct { void *handle; uint64_t max_spill_fill; } groupRegistration_;
        uint64_t u64_;
    };
} QnnHtpContext_CustomConfig_t;

typedef void (*QnnLog_Callback_t)(const char *fmt, uint32_t level, uint64_t timestamp, va_list args);

/* The function table of QnnInterface.h (QNN_INTERFACE_VER_TYPE), in order;
 * slots the adapter does not call are plain pointers. */
typedef struct {
    void *propertyHasCapability;
    Qnn_ErrorHandle_t (*backendCreate)(Qnn_Handle_t log, const Qnn_Config_t **, Qnn_Handle_t *backend);
    void *backendSetConfig;
    Qnn_ErrorHandle_t (*backendGetApiVersion)(Qnn_ApiVersion_t *);
    Qnn_ErrorHandle_t (*backendGetBuildId)(const char **);
    void *backendRegisterOpPackage;
    void *backendGetSupportedOperations;
    Qnn_ErrorHandle_t (*backendValidateOpConfig)(Qnn_Handle_t backend, Qnn_OpConfig_t);
    Qnn_ErrorHandle_t (*backendFree)(Qnn_Handle_t backend);
    Qnn_ErrorHandle_t (*contextCreate)(Qnn_Handle_t backend, Qnn_Handle_t device, const Qnn_Config_t **,
                                       Qnn_Handle_t *context);
    void *contextSetConfig;
    Qnn_ErrorHandle_t (*contextGetBinarySize)(Qnn_Handle_t context, Qnn_ContextBinarySize_t *);
    Qnn_ErrorHandle_t (*contextGetBinary)(Qnn_Handle_t context, void *buf, Qnn_ContextBinarySize_t size,
                                          Qnn_ContextBinarySize_t *written);
    Qnn_ErrorHandle_t (*contextCreateFromBinary)(Qnn_Handle_t backend, Qnn_Handle_t device, const Qnn_Config_t **,
                                                 const void *binary, Qnn_ContextBinarySize_t size,
                                                 Qnn_Handle_t *context, Qnn_Handle_t profile);
    Qnn_ErrorHandle_t (*contextFree)(Qnn_Handle_t context, Qnn_Handle_t profile);
    Qnn_ErrorHandle_t (*graphCreate)(Qnn_Handle_t context, const char *name, const Qnn_Config_t **,
                                     Qnn_Handle_t *graph);
    void *graphCreateSubgraph;
    void *graphSetConfig;
    Qnn_ErrorHandle_t (*graphAddNode)(Qnn_Handle_t graph, Qnn_OpConfig_t);
    Qnn_ErrorHandle_t (*graphFinalize)(Qnn_Handle_t graph, Qnn_Handle_t profile, Qnn_Handle_t signal);
    Qnn_ErrorHandle_t (*graphRetrieve)(Qnn_Handle_t context, const char *name, Qnn_Handle_t *graph);
    Qnn_ErrorHandle_t (*graphExecute)(Qnn_Handle_t graph, const Qnn_Tensor_t *in, uint32_t n_in, Qnn_Tensor_t *out,
                                      uint32_t n_out, Qnn_Handle_t profile, Qnn_Handle_t signal);
    void *graphExecuteAsync;
    void *tensorCreateContextTensor; /* unsupported by HTP on x86 (1000) */
    Qnn_ErrorHandle_t (*tensorCreateGraphTensor)(Qnn_Handle_t graph, Qnn_Tensor_t *);
    Qnn_ErrorHandle_t (*logCreate)(QnnLog_Callback_t, uint32_t level, Qnn_Handle_t *log);
    void *logSetLogLevel;
    Qnn_ErrorHandle_t (*logFree)(Qnn_Handle_t log);
    void *profile_[7]; /* create, setConfig, getEvents, getSubEvents, getEventData, getExtendedEventData, free */
    void *mem_[2];     /* register, deRegister */
    void *deviceGetPlatformInfo, *deviceFreePlatformInfo, *deviceGetInfrastructure;
    Qnn_ErrorHandle_t (*deviceCreate)(Qnn_Handle_t log, const Qnn_Config_t **, Qnn_Handle_t *device);
    void *deviceSetConfig, *deviceGetInfo;
    Qnn_ErrorHandle_t (*deviceFree)(Qnn_Handle_t device);
    void *signal_[4];
    Qnn_ErrorHandle_t (*errorGetMessage)(Qnn_ErrorHandle_t, const char **);
    void *errorGetVerboseMessage, *errorFreeVerboseMessage; /* 1000 (unsupported) in v2.51 */
    void *rest_[18]; /* graph environment, contextValidateBinary, async/section/incremental APIs, ... */
} QnnIface_t;

typedef struct {
    uint32_t backendId;
    const char *providerName;
    Qnn_ApiVersion_t apiVersion;
    QnnIface_t v; /* the newest table layout; append-only across 2.x */
} QnnInterface_t;
typedef Qnn_ErrorHandle_t (*QnnInterfaceGetProvidersFn_t)(const QnnInterface_t ***list, uint32_t *n);

/* libQnnSystem: binary info of a context binary. */
typedef struct {
    Qnn_ErrorHandle_t (*systemContextCreate)(Qnn_Handle_t *);
    Qnn_ErrorHandle_t (*systemContextGetBinaryInfo)(Qnn_Handle_t, void *binary, uint64_t size, const void **info,
                                                    Qnn_ContextBinarySize_t *info_size);
    void *systemContextGetMetaData;
    Qnn_ErrorHandle_t (*systemContextFree)(Qnn_Handle_t);
} QnnSysIface_t;
typedef struct {
    uint32_t backendId;
    const char *providerName;
    Qnn_Version_t systemApiVersion;
    QnnSysIface_t v;
} QnnSystemInterface_t;
typedef Qnn_ErrorHandle_t (*QnnSystemInterfaceGetProvidersFn_t)(const QnnSystemInterface_t ***list, uint32_t *n);

/* The binary info record QNN v2.51 returns is version 3, whose layout is not
 * the public V1/V2 one; these offsets were decoded by the probe. */
enum {
    QNN_BININFO_V3 = 3,
    QNN_BININFO_NGRAPHS_OFF = 96,  /* uint32_t */
    QNN_BININFO_GRAPHS_OFF = 104,  /* graph entries */
    QNN_BININFO_GRAPH_STRIDE = 88, /* per graph: uint32 version, then name, n_in, inputs, n_out, outputs */
};
typedef struct {
    const char *graphName;
    uint32_t numGraphInputs;
    Qnn_Tensor_t *graphInputs;
    uint32_t numGraphOutputs;
    Qnn_Tensor_t *graphOutputs;
} QnnSystemContext_GraphInfo_t;

_Static_assert(sizeof(void *) == 8, "QNN declarations are for LP64 targets");
_Static_assert(sizeof(Qnn_QuantizeParams_t) == 40, "Qnn_QuantizeParams_t");
_Static_assert(sizeof(Qnn_BwAxisScaleOffset_t) == 32 && offsetof(Qnn_BwAxisScaleOffset_t, scales) == 16,
               "Qnn_BwAxisScaleOffset_t (the probe's pc4u layout)");
_Static_assert(sizeof(Qnn_BlockwiseExpansion_t) == 40 && offsetof(Qnn_BlockwiseExpansion_t, blocksScale8) == 32,
               "Qnn_BlockwiseExpansion_t (the probe's lpbq4u layout)");
_Static_assert(offsetof(Qnn_TensorV2_t, quantizeParams) == 32, "Qnn_TensorV2_t.quantizeParams");
_Static_assert(offsetof(Qnn_TensorV2_t, rank) == 72, "Qnn_TensorV2_t.rank");
_Static_assert(offsetof(QnnHtpContext_CustomConfig_t, weightSharingEnabled) == 8, "QnnHtpContext_CustomConfig_t: the flag after the 8-aligned union start");
_Static_assert(offsetof(Qnn_TensorV2_t, clientBuf) == 96, "Qnn_TensorV2_t.clientBuf");
_Static_assert(sizeof(Qnn_TensorV2_t) == 136, "Qnn_TensorV2_t");
_Static_assert(sizeof(Qnn_Tensor_t) == 144, "Qnn_Tensor_t (version 2)");
_Static_assert(sizeof(Qnn_Param_t) == 160, "Qnn_Param_t");
_Static_assert(sizeof(Qnn_OpConfig_t) == 80, "Qnn_OpConfig_t (version 1)");
_Static_assert(offsetof(QnnInterface_t, v) == 40, "QnnInterface_t function table offset");
_Static_assert(sizeof(QnnIface_t) == 69 * sizeof(void *), "QNN 2.40 interface table: 69 entries");
_Static_assert(offsetof(QnnIface_t, graphExecute) == 21 * 8, "QnnIface_t.graphExecute slot");
_Static_assert(offsetof(QnnIface_t, deviceCreate) == 40 * 8, "QnnIface_t.deviceCreate slot");
_Static_assert(offsetof(QnnIface_t, errorGetMessage) == 48 * 8, "QnnIface_t.errorGetMessage slot");
_Static_assert(sizeof(QnnSystemContext_GraphInfo_t) == 40, "QnnSystemContext_GraphInfoV1_t");
#endif
